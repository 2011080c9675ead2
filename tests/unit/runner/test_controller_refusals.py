"""Fail closed before any host: a secret reference that does not resolve (variable unset or empty, file
missing or empty) or a controller-side file that is missing makes plan, apply, rollback and drift exit 2
naming the field, its YAML line and the fix, with nothing run; only what the selected phases use is needed;
validate reports the same as warnings."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import apply_cmd, drift_cmd, exits, plan_cmd, rollback_cmd
from orchestrator.cli.app import app
from orchestrator.pipeline import validate_file
from orchestrator.validation.controller import controller_findings, resolve_secret
from tests.helpers import CLOSED_WEBHOOK, copy_ready_site

SITE = "a2-fleet-gateway"
COMMANDS = {
    "plan": ("plan", SITE),
    "apply": ("apply", SITE, "--yes"),
    "rollback": ("rollback", SITE, "--yes"),
    "drift": ("drift", SITE),
}


class Ran(Exception):
    """A run was started: the refusal did not happen."""


def never(*_args: Any, **_kwargs: Any) -> Any:
    raise Ran


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for module in (apply_cmd, plan_cmd, drift_cmd):
        monkeypatch.setattr(module, "apply", never)
    monkeypatch.setattr(rollback_cmd, "run_and_report", never)
    monkeypatch.setenv("DRIFT_WEBHOOK_URL", CLOSED_WEBHOOK)
    return copy_ready_site(tmp_path, SITE)


def spec_path(root: Path) -> Path:
    return root / "inventories" / SITE / "site.yaml"


def set_api_key(root: Path, ref: str) -> int:
    """Point serving.api_key at ref; returns its line number."""
    spec = spec_path(root)
    lines = spec.read_text().splitlines()
    (n,) = [i for i, line in enumerate(lines) if line.startswith("  api_key: ")]
    lines[n] = f"  api_key: {ref}"
    spec.write_text("\n".join(lines) + "\n")
    return n + 1


def invoke(root: Path, *args: str) -> int:
    try:
        rc = app(args=["--root", str(root), *args], prog_name="orchestrator", standalone_mode=False)
    except Ran:
        return -1
    return rc if isinstance(rc, int) else 0


def said(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("value", "why"),
    [(None, "is not set on the controller"), ("", "is set but empty"), ("  \n", "is set but empty")],
    ids=["unset", "empty", "blank"],
)
def test_an_unresolved_api_key_variable_refuses_before_any_host(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    value: str | None,
    why: str,
) -> None:
    line = set_api_key(root, "env:SITE_API_KEY")
    if value is None:
        monkeypatch.delenv("SITE_API_KEY", raising=False)
    else:
        monkeypatch.setenv("SITE_API_KEY", value)
    assert invoke(root, *COMMANDS[command]) == exits.INVALID_SPEC
    text = said(capsys)
    assert f"site.yaml:{line}:" in text
    assert "error: serving.api_key: env:SITE_API_KEY does not resolve" in text
    assert f"the environment variable SITE_API_KEY {why}" in text
    assert "fix: export SITE_API_KEY" in text and "no host was touched" in text
    assert not (root / ".orchestrator" / "runs").exists()


@pytest.mark.parametrize("content", [None, "", "\n"], ids=["missing", "empty", "blank"])
def test_an_unresolved_api_key_file_refuses_apply(
    root: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    key = root / "api.key"
    if content is not None:
        key.write_text(content)
    set_api_key(root, f"file:{key}")
    assert invoke(root, *COMMANDS["apply"]) == exits.INVALID_SPEC
    text = said(capsys)
    assert f"serving.api_key: file:{key} does not resolve: {key}" in text
    assert ("cannot be read (No such file or directory)" if content is None else f"{key} is empty") in text
    assert f"fix: write the secret into {key}" in text


def test_only_what_the_selected_phases_use_is_needed(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_api_key(root, "env:SITE_API_KEY")
    monkeypatch.delenv("SITE_API_KEY", raising=False)
    # serving.api_key is read by the serve phase only: a preflight plan runs
    assert invoke(root, "plan", SITE, "--phases", "preflight") == -1
    assert invoke(root, "plan", SITE, "--phases", "preflight,serve") == exits.INVALID_SPEC
    # drift needs the webhook URL of its report, whatever the phases
    monkeypatch.delenv("DRIFT_WEBHOOK_URL")
    assert invoke(root, "drift", SITE, "--phases", "preflight") == exits.INVALID_SPEC
    assert "drift.outputs[1].url: env:DRIFT_WEBHOOK_URL does not resolve" in said(capsys)
    assert invoke(root, "apply", SITE, "--yes", "--phases", "preflight") == -1


def test_missing_controller_files_are_named_with_field_and_line(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = spec_path(root)
    text = spec.read_text()
    pkg = root / "driver.run"
    pkg.write_bytes(b"a driver that is not the one the spec pins")
    text = re.sub(r"(?m)^(\s*key_file:) \S+$", r"\1 /nonexistent/fleet_ed25519", text)
    text = re.sub(r"url: https://mirror\S+npu-driver\S+", f"path: {pkg}", text)
    spec.write_text(text)
    assert invoke(root, "apply", SITE, "--yes", "--phases", "drivers") == exits.INVALID_SPEC
    out = said(capsys)
    assert re.search(r"site\.yaml:7:\d+: error: ssh\.key_file: /nonexistent/\S+ does not exist", out)
    actual = hashlib.sha256(pkg.read_bytes()).hexdigest()
    assert f"error: software.driver.path: {pkg} has sha256 {actual}, not the software.driver.sha256" in out
    assert "fix: download the package again from its vendor" in out


def test_validate_warns_about_the_same_and_stays_valid(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = set_api_key(root, "env:SITE_API_KEY")
    monkeypatch.delenv("SITE_API_KEY", raising=False)
    assert invoke(root, "validate", SITE, "--quiet") == exits.OK
    assert f"site.yaml:{line}:12: warning: serving.api_key: env:SITE_API_KEY does not resolve" in said(capsys)
    spec = spec_path(root)
    assert validate_file(spec).ok
    found = controller_findings(
        validate_file(spec).spec,  # type: ignore[arg-type]
        spec.parent,
        ["serve"],
        environ={},
    )
    assert [(f.path, f.code) for f in found] == [(("serving", "api_key"), "secret")]


def test_relative_secret_files_are_read_from_the_specs_folder(tmp_path: Path) -> None:
    (tmp_path / "k").write_text(" s3cret \n")
    assert resolve_secret("file:k", tmp_path, {}) == "s3cret"
    assert resolve_secret("env:K", tmp_path, {"K": " v "}) == "v"


def test_a_site_folder_that_differs_from_site_warns(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    moved = root / "inventories" / "fleet"
    (root / "inventories" / SITE).rename(moved)
    assert invoke(root, "validate", str(moved / "site.yaml"), "--quiet") == exits.OK
    text = said(capsys)
    assert re.search(r"site\.yaml:\d+:\d+: warning: site: site is 'a2-fleet-gateway' but the spec", text)
    assert "fix: rename the folder to 'a2-fleet-gateway' or set site: fleet" in text


def test_each_secret_is_named_by_its_own_field(root: Path) -> None:
    """The registry password (image phase) and the webhook URL (drift) each under their own path."""
    spec = spec_path(root)
    text = spec.read_text()
    (ref,) = set(re.findall(r"file:\S+registry_password", text))
    spec.write_text(text.replace(ref, "env:SITE_REGISTRY_PASSWORD"))
    result = validate_file(spec)
    assert result.spec is not None
    found = controller_findings(result.spec, spec.parent, ["image", "drift"], environ={})
    assert [(f.path, f.code) for f in found] == [
        (("image", "registry", "password"), "secret"),
        (("drift", "outputs", 1, "url"), "secret"),
    ]
    assert found[0].message.startswith("env:SITE_REGISTRY_PASSWORD does not resolve: the environment")
