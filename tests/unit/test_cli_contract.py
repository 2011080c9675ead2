"""The command-line contract scripts rely on: exit codes, --version, --root, JSON findings, what `validate`
loads, and that `examples` only writes when asked."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from orchestrator.cli.app import Commands, app
from tests.helpers import PATIENCE_S, ROOT, load_example, run_cli, to_yaml

EXAMPLE = "a2-single-distill"


run = run_cli


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    out = run("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"orchestrator {version('ascend-orchestrator')}"


def test_usage_errors_exit_64_without_a_traceback() -> None:
    for args in (("validate", "--no-such-option", EXAMPLE), ("validate",), ("no-such-command",), ()):
        out = run(*args)
        assert out.returncode == 64, (args, out.returncode, out.stderr)
        assert "Traceback" not in out.stderr
    assert "No such option: --no-such-option" in run("validate", "--no-such-option", EXAMPLE).stderr


def test_missing_spec_file_exits_66(tmp_path: Path) -> None:
    out = run("validate", str(tmp_path / "nowhere.yaml"))
    assert out.returncode == 66
    assert "no site spec at" in out.stderr and "Fix:" in out.stderr


def test_root_option_and_environment_variable_locate_sites(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(ROOT / "inventories" / EXAMPLE, root / "inventories" / EXAMPLE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run("validate", "-q", EXAMPLE, cwd=elsewhere).returncode == 66
    assert run("--root", str(root), "validate", "-q", EXAMPLE, cwd=elsewhere).returncode == 0
    by_env = run("validate", "-q", EXAMPLE, cwd=elsewhere, env={"ORCHESTRATOR_ROOT": str(root)})
    assert by_env.returncode == 0, by_env.stderr
    # from a folder below the root, the root is found by walking up
    deep = root / "inventories" / EXAMPLE / "host_vars"
    assert run("validate", "-q", EXAMPLE, cwd=deep).returncode == 0


def test_validate_json_lists_every_finding_with_its_position(tmp_path: Path) -> None:
    data = load_example(EXAMPLE)
    data["serving"]["parallelism"]["tp"] = 3
    data["sevrers"] = data.pop("servers")
    spec = tmp_path / "site.yaml"
    text = to_yaml(data)
    spec.write_text(text)
    out = run("validate", "--format", "json", str(spec))
    assert out.returncode == 2
    doc = json.loads(out.stdout)
    assert doc["valid"] is False and doc["file"] == str(spec)
    assert doc["errors"] == len([f for f in doc["findings"] if f["severity"] == "error"]) >= 1
    unknown = next(f for f in doc["findings"] if f["path"] == "sevrers")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("sevrers:"))
    assert (unknown["line"], unknown["col"]) == (line, 1)
    assert unknown["code"] == "unknown-key" and "did you mean 'servers'?" in unknown["fix"]
    assert unknown["related"] == []
    ok = json.loads(run("validate", "--format", "json", EXAMPLE).stdout)
    assert ok["valid"] is True and ok["errors"] == 0 and len(ok["spec_sha256"]) == 64


HEAVY = (
    "openai",
    "httpx",
    "numpy",
    "ansible_runner",
    "junitparser",
    "prometheus_client",
    "matplotlib",
    "docker",
    "ansible",
)
"""What the commands that run playbooks, measure or simulate import (apply, drift, bench, sim, ...)."""
NOT_FOR_VALIDATE = ("runner", "render", "history", "drift", "bench", "status", "doctor", "sim", "weights")
"""orchestrator packages validate has no use for."""

IMPORT_PROBE = """
import importlib.util, json, sys
argv, heavy, layers = json.loads(sys.argv[1])
assert all(importlib.util.find_spec(name) for name in heavy), "every heavy module must be installed"
from orchestrator.cli.app import main
try:
    main(argv)
except SystemExit as e:
    assert e.code == 0, e.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.split(".")[:2] in layers)
print(json.dumps(loaded), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--help"],
        ["validate", "-q", EXAMPLE],
        ["validate", "a2-pair-r1-w8a8"],
        ["validate", "--format", "json", EXAMPLE],
    ],
    ids=["help", "quiet", "plan", "json"],
)
def test_validate_imports_only_what_it_uses(argv: list[str]) -> None:
    """Commands are imported when they run (cli/lazy.py): validate loads no heavy dependency and none of the
    layers that touch hosts, and so starts fast."""
    layers = [["orchestrator", name] for name in NOT_FOR_VALIDATE]
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, json.dumps([argv, HEAVY, layers])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []


def test_every_command_of_the_table_loads_under_its_name() -> None:
    """A typo in the lazy table (cli/app.py) shows only when the command runs: load every one here."""
    group = typer.main.get_command(app)
    assert isinstance(group, Commands)
    ctx = group.make_context("orchestrator", ["validate", "--help"], resilient_parsing=True)
    assert group.list_commands(ctx) == list(Commands.lazy_commands)
    for name in Commands.lazy_commands:
        command = group.get_command(ctx, name)
        assert command is not None and command.name == name and command.help, name


def test_examples_writes_nothing_and_reports_a_stale_inventory(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "inventories" / EXAMPLE, tmp_path / "inventories" / EXAMPLE)
    folder = tmp_path / "inventories" / EXAMPLE
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    fresh = run("--root", str(tmp_path), "examples")
    assert fresh.returncode == 0, fresh.stderr
    assert "committed inventory is up to date" in fresh.stdout
    hosts = folder / "hosts.yml"
    hosts.write_text(hosts.read_text() + "# hand edit\n")
    stale = run("--root", str(tmp_path), "examples")
    assert stale.returncode == 1
    assert "STALE: hosts.yml" in stale.stdout and "orchestrator examples --write" in stale.stdout
    assert hosts.read_text().endswith("# hand edit\n"), "examples must not rewrite without --write"
    # --write renders like `render`: a hand-edited file of render's own is refused (73), not overwritten
    assert run("--root", str(tmp_path), "examples", "--write").returncode == 73
    assert hosts.read_text().endswith("# hand edit\n")
    hosts.write_text(hosts.read_text().removesuffix("# hand edit\n"))
    assert run("--root", str(tmp_path), "examples", "--write").returncode == 0
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_validate_json_names_the_first_definition_of_a_duplicate(tmp_path: Path) -> None:
    data = load_example("a2-pair-r1-w8a8")
    data["servers"][1]["name"] = data["servers"][0]["name"]
    spec = tmp_path / "site.yaml"
    text = to_yaml(data)
    spec.write_text(text)
    doc = json.loads(run("validate", "--format", "json", str(spec)).stdout)
    dup = next(f for f in doc["findings"] if f["path"] == "servers[1].name")
    lines = [i for i, ln in enumerate(text.splitlines(), 1) if ln.strip() == "name: a2-01"]
    assert dup["line"] == lines[1]
    assert [(r["path"], r["line"]) for r in dup["related"]] == [("servers[0].name", lines[0])]
