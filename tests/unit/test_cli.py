"""The command line: exit codes, output shape, no stack traces, schema and docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.spec.docs import spec_reference
from tests.helpers import ROOT, load_example, run_cli, to_yaml

run = run_cli


def test_validate_prints_the_plan_for_a_valid_site() -> None:
    out = run("validate", "a2-pair-r1-w8a8")
    assert out.returncode == 0, out.stderr
    assert "a2-pair-r1-w8a8/site.yaml: valid (" in out.stderr and "valid (" not in out.stdout
    assert (
        "Replica r1 (group default, multi-node data parallel, tp 4 x pp 1 x dp 4, expert parallel over 16 "
        "NPUs) -> http://10.20.1.11:8000/v1" in " ".join(out.stdout.split())  # wrapped to 80 columns
    )
    assert "(quantized w8a8, dtype bfloat16)" in " ".join(out.stdout.split())
    assert "a2-02        headless   NPUs 0-7  DP ranks 2-3" in out.stdout
    assert "memory per NPU: weights" in out.stdout


def test_invalid_spec_exits_2_with_positions_and_writes_nothing(tmp_path: Path) -> None:
    data = load_example("a2-single-distill")
    data["serving"]["parallelism"]["tp"] = 3
    data["sevrers"] = data.pop("servers")
    spec = tmp_path / "site.yaml"
    spec.write_text(to_yaml(data))
    for cmd in ("validate", "render", "phases"):
        out = run(cmd, str(spec))
        assert out.returncode == 2, (cmd, out.stderr)
        assert "Traceback" not in out.stderr + out.stdout
        assert f"{spec}:" in out.stderr and ": error: sevrers: unknown key 'sevrers'" in out.stderr
        assert "did you mean 'servers'?" in out.stderr
        assert "INVALID: " in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.yaml"]


def test_unknown_site_exits_66() -> None:
    out = run("validate", "no-such-site")
    assert out.returncode == 66
    assert "no site spec at 'no-such-site'" in out.stderr and "Known sites under " in out.stderr


def test_render_writes_beside_the_spec_and_is_repeatable(tmp_path: Path) -> None:
    spec = tmp_path / "lab" / "site.yaml"
    spec.parent.mkdir()
    spec.write_text((ROOT / "inventories/a2-pair-r1-w8a8/site.yaml").read_text())
    first = run("render", str(spec))
    assert first.returncode == 0, first.stderr
    files = sorted(str(p.relative_to(spec.parent)) for p in spec.parent.rglob("*") if p.is_file())
    assert files == [
        ".inventory-manifest.json",
        "ansible.cfg",
        "group_vars/all.yml",
        "group_vars/npu.yml",
        "host_vars/a2-01.yml",
        "host_vars/a2-02.yml",
        "host_vars/ops-01.yml",
        "hosts.yml",
        "play_vars.yml",
        "site.yaml",
    ]
    snapshot = {f: (spec.parent / f).read_bytes() for f in files}
    assert run("render", str(spec)).returncode == 0
    assert snapshot == {f: (spec.parent / f).read_bytes() for f in files}


def test_phases_lists_every_phase_in_order() -> None:
    out = run("phases", "a2-fleet-gateway")
    assert out.returncode == 0, out.stderr
    names = [line.split()[1] for line in out.stdout.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert names == [
        "preflight",
        "drivers",
        "host",
        "network",
        "image",
        "weights",
        "serve",
        "gateway",
        "monitoring",
    ]
    assert " 8. gateway    [edge-01]\n" in out.stdout
    assert " 4. network    [skipped: no host]\n" in out.stdout
    # the container engine runs on the NPU servers and on the gateway/monitoring host (the old "runtime")
    assert " 3. host       [a2-01, a2-02, a2-03, a2-04, edge-01]\n" in out.stdout
    assert "a replica that fails a gate goes back to its previous release" in " ".join(out.stdout.split())


def test_schema_is_json_schema_of_the_spec() -> None:
    out = run("schema")
    assert out.returncode == 0
    schema = json.loads(out.stdout)
    assert schema["title"] == "SiteSpec"
    assert {"site", "servers", "profiles", "serving", "model"} <= set(schema["required"])
    assert schema["additionalProperties"] is False


def test_docs_reference_is_current() -> None:
    assert (ROOT / "docs/spec.md").read_text(encoding="utf-8") == spec_reference(), (
        "docs/spec.md is stale: run `orchestrator docs --write docs/spec.md`"
    )
    assert run("docs", "--check", "docs/spec.md").returncode == 0


def test_docs_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "spec.md"
    stale.write_text("# old\n")
    out = run("docs", "--check", str(stale))
    assert out.returncode == 1 and "is stale" in out.stderr


def test_internal_errors_are_a_sentence_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from orchestrator.cli import app as cli

    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(cli, "app", boom)
    monkeypatch.delenv("ORCHESTRATOR_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exc:
        cli.main()
    assert exc.value.code == 70
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: simulated failure" in err and "ORCHESTRATOR_DEBUG=1" in err


def test_examples_command_validates_and_renders_all(tmp_path: Path) -> None:
    out = run("examples", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    for site in (
        "a2-single-distill",
        "a2-pair-r1-w8a8",
        "a3-single-r1-w8a8",
        "duo-300i-distill",
        "a2-fleet-gateway",
    ):
        assert f"Site {site}:" in out.stdout
    sites = sorted(p.parent.name for p in ROOT.glob("inventories/*/site.yaml"))
    assert out.stdout.count(" 7. serve") == len(sites)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.parent.name for p in ROOT.glob("inventories/*/site.yaml")
    )
