"""`orchestrator drift` command line: an invalid spec exits 2 before anything runs (and still leaves its
exit code in the textfile), usage errors exit 64, and a run (apply() replaced by a hand-built check-mode
run) prints and writes its outputs and exits with the report's code."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from prometheus_client.parser import text_string_to_metric_families

from orchestrator.cli import drift_cmd, exits
from orchestrator.cli.app import app
from orchestrator.runner.apply import ApplyRequest
from orchestrator.runner.cancel import Cancel
from orchestrator.runner.model import PhaseResult, PhaseStatus, Run
from tests.helpers import CLOSED_WEBHOOK, ROOT, copy_ready_site, load_example, run_cli, to_yaml
from tests.unit.drift.drift_runs import FILE, ok

SITE = "a2-fleet-gateway"
XSD = ROOT / "tests" / "data" / "junit" / "junit-10.xsd"


def copy_site(tmp_path: Path) -> Path:
    return copy_ready_site(tmp_path, SITE)


@pytest.fixture(autouse=True)
def _webhook(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's webhook reference resolves (to a port nothing listens on) unless a test says else."""
    monkeypatch.setenv("DRIFT_WEBHOOK_URL", CLOSED_WEBHOOK)


def metrics(path: Path) -> dict[str, float]:
    return {
        s.name: s.value
        for f in text_string_to_metric_families(path.read_text())
        for s in f.samples
        if not s.labels.get("host")
    }


def test_invalid_spec_exits_2_runs_nothing_and_leaves_the_exit_code(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    data = load_example(SITE)
    data["sevrers"] = data.pop("servers")
    (root / "inventories" / SITE / "site.yaml").write_text(to_yaml(data))
    prom = tmp_path / "tf" / "orchestrator_drift_x.prom"
    out = run_cli("--root", str(root), "drift", SITE, "--format", "json", "--textfile", str(prom))
    assert out.returncode == exits.INVALID_SPEC
    assert out.stdout == ""
    assert "unknown key 'sevrers'" in out.stderr
    assert not (root / ".orchestrator").exists()
    assert metrics(prom)["orchestrator_drift_last_run_exit_code"] == 2


def test_usage_errors_exit_64(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    cases = {
        ("--limit", "nope"): "'nope' is neither a host nor a group of this site",
        ("--textfile", str(tmp_path / "drift.txt")): "node_exporter's textfile collector reads only *.prom",
        ("--format", "yaml"): "yaml",
    }
    for args, message in cases.items():
        out = run_cli("--root", str(root), "drift", SITE, *args)
        assert out.returncode == exits.USAGE, (args, out.stderr)
        assert message in " ".join(out.stderr.split()), (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert not (root / ".orchestrator" / "runs").exists()


def test_help_documents_the_exit_codes_and_the_short_form() -> None:
    text = " ".join(run_cli("drift", "check", "--help").stdout.split())
    for fragment in (
        "0 no drift",
        "3 drift found",
        "4 hosts unreachable",
        "2 invalid spec",
        "130 interrupted",
    ):
        assert fragment in text, fragment
    group = " ".join(run_cli("drift", "--help").stdout.split())
    assert "`orchestrator drift SITE` is short for `orchestrator drift check SITE`" in group
    assert "schedule" in group


class FakeApply:
    """Stands in for runner.apply.apply: records the request, returns a check-mode run with drift on the
    first host of the host phase."""

    def __init__(self, artifacts: Path) -> None:
        self.artifacts = artifacts
        self.requests: list[ApplyRequest] = []

    def __call__(self, req: ApplyRequest, observer: Any, cancel: Cancel, run_id: str | None = None) -> Run:
        self.requests.append(req)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        run = Run("20261204T220000Z-aaaaaa", req.site, req.check, artifacts=str(self.artifacts))
        for ph in req.phases:
            hosts: Sequence[str] = [h for h in ph.hosts if req.hosts is None or h in req.hosts]
            result = PhaseResult(ph.name, PhaseStatus.OK, hosts={h: ok() for h in hosts})
            if ph.name == "host" and hosts:
                result.hosts[hosts[0]] = ok(changed=1)
                result.changes = [replace(FILE, host=hosts[0])]
            run.phases.append(result)
        return run


def invoke(*args: str) -> int:
    """In process, as main() runs it: standalone_mode=False returns typer.Exit's code."""
    rc = app(args=list(args), prog_name="orchestrator", standalone_mode=False)
    return rc if isinstance(rc, int) else 0


def test_a_run_writes_every_output_and_exits_with_the_reports_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_site(tmp_path)
    fake = FakeApply(tmp_path / "run")
    monkeypatch.setattr(drift_cmd, "apply", fake)
    prom, junit = tmp_path / "o" / "drift.prom", tmp_path / "o" / "drift.xml"
    code = invoke(
        "--root", str(root), "drift", SITE, "--phases", "preflight,host", "--limit", "a2-01,a2-02",
        "--format", "json", "--textfile", str(prom), "--junit", str(junit),
    )  # fmt: skip
    assert code == exits.HOSTS_FAILED  # 3: drift found
    (req,) = fake.requests
    assert req.check is True
    assert [p.name for p in req.phases] == ["preflight", "host"]
    assert req.hosts == {"a2-01", "a2-02"}
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 3
    assert data["drifted_hosts"] == ["a2-01"]
    assert {(c["host"], c["phase"]) for c in data["cells"]} == {
        (h, p) for h in ("a2-01", "a2-02") for p in ("preflight", "host")
    }
    assert json.loads((tmp_path / "run" / "drift.json").read_text())["exit_code"] == 3
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    got = {
        (s.name, s.labels.get("host"), s.labels.get("phase")): s.value
        for f in text_string_to_metric_families(prom.read_text())
        for s in f.samples
    }
    assert got[("orchestrator_drift", "a2-01", "host")] == 1
    assert got[("orchestrator_drift", "a2-02", "host")] == 0
    assert got[("orchestrator_drift_last_run_exit_code", None, None)] == 3


def test_in_sync_exits_0_with_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_site(tmp_path)
    fake = FakeApply(tmp_path / "run")
    monkeypatch.setattr(drift_cmd, "apply", fake)
    assert invoke("--root", str(root), "drift", "check", SITE, "--phases", "preflight") == exits.OK
    assert "drift of a2-fleet-gateway: in sync (exit 0)" in capsys.readouterr().out
    # the short form with an option before SITE
    short = ("--root", str(root), "drift", "--phases", "preflight", SITE, "--format", "junit")
    assert invoke(*short) == exits.OK
    assert capsys.readouterr().out.startswith('<?xml version="1.0"')
    assert len(fake.requests) == 2


def test_fail_on_drift_false_exits_0_and_the_report_reaches_the_specs_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example's outputs: file drift-reports and a webhook from env:DRIFT_WEBHOOK_URL (a real server on
    127.0.0.1 whose URL carries a token that nothing may print or store)."""
    from tests.unit.drift.test_drift_deliver import TOKEN, Hook

    root = copy_site(tmp_path)
    spec = root / "inventories" / SITE / "site.yaml"
    spec.write_text(spec.read_text().replace("drift:\n", "drift:\n  fail_on_drift: false\n", 1))
    hook = Hook()
    try:
        monkeypatch.setenv("DRIFT_WEBHOOK_URL", hook.url)
        monkeypatch.setattr(drift_cmd, "apply", FakeApply(tmp_path / "run"))
        code = invoke("--root", str(root), "drift", SITE, "--phases", "host", "--format", "json")
    finally:
        hook.server.shutdown()
        hook.server.server_close()
    out, err = capsys.readouterr()
    assert code == exits.OK, err
    report = json.loads(out)
    assert (report["verdict"], report["exit_code"]) == ("drift", 3)  # the report still says drift
    assert "exit 0 because drift.fail_on_drift is false" in err
    saved = root / "drift-reports" / SITE / f"{report['run_id']}.json"
    assert json.loads(saved.read_text()) == report == json.loads((saved.parent / "latest.json").read_text())
    ((path, kind, body),) = hook.posts
    assert (path, kind, json.loads(body)) == (f"/hook/{TOKEN}", "application/json", report)
    assert TOKEN not in out + err
    for f in [*(root / ".orchestrator").rglob("*"), *(tmp_path / "run").rglob("*")]:
        assert not f.is_file() or TOKEN.encode() not in f.read_bytes(), f


def test_fail_on_drift_false_keeps_a_failed_check_at_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_site(tmp_path)
    spec = root / "inventories" / SITE / "site.yaml"
    spec.write_text(spec.read_text().replace("drift:\n", "drift:\n  fail_on_drift: false\n", 1))
    fake = FakeApply(tmp_path / "run")

    def failing(req: ApplyRequest, observer: Any, cancel: Cancel, run_id: str | None = None) -> Run:
        run = fake(req, observer, cancel, run_id)
        host = run.phases[0]
        first = next(iter(host.hosts))
        host.hosts[first] = replace(host.hosts[first], failed=1)
        return run

    monkeypatch.setattr(drift_cmd, "apply", failing)
    code = invoke("--root", str(root), "drift", SITE, "--phases", "host", "--format", "json")
    out, err = capsys.readouterr()
    assert code == exits.HOSTS_FAILED, err
    assert json.loads(out)["failed_hosts"]
    assert "the drift report did not reach drift.outputs[1]" in err, err  # it warns; the code stands
