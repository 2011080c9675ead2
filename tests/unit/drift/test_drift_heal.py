"""`orchestrator drift SITE --heal` and `orchestrator heal SITE` (apply() replaced by hand-built runs): a
check that found drift in the serve or gateway phase is followed by one heal run of exactly those phases
with the role's heal variables (one head server at a time), recorded as kind "heal"; drift elsewhere heals
nothing and keeps exit 3; --heal cannot share stdout with a machine format; `drift schedule --heal`
schedules the heal."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import apply_cmd, drift_cmd, exits
from orchestrator.cli.app import app
from orchestrator.history import db
from orchestrator.runner.apply import ApplyRequest
from orchestrator.runner.cancel import Cancel
from orchestrator.runner.model import PhaseResult, PhaseStatus, Run
from tests.helpers import CLOSED_WEBHOOK, copy_ready_site, run_cli
from tests.unit.drift.drift_runs import ok

SITE = "a2-fleet-gateway"
HEAL = {"vllm_serve_heal": True, "play_serve_serial": 1}


@pytest.fixture(autouse=True)
def _webhook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFT_WEBHOOK_URL", CLOSED_WEBHOOK)


class Runs:
    """apply() of both the check and the heal: a check run has one changed host in each phase of
    ``drifted``; a heal run changes nothing and is ok."""

    def __init__(self, artifacts: Path, drifted: set[str]) -> None:
        self.artifacts, self.drifted = artifacts, drifted
        self.requests: list[ApplyRequest] = []

    def __call__(self, req: ApplyRequest, observer: Any, cancel: Cancel, run_id: str | None = None) -> Run:
        self.requests.append(req)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        run = Run(run_id or "20261207T160000Z-aaaaaa", req.site, req.check, artifacts=str(self.artifacts))
        for ph in req.phases:
            hosts: Sequence[str] = list(ph.hosts)
            result = PhaseResult(ph.name, PhaseStatus.OK, hosts={h: ok() for h in hosts})
            if req.check and ph.name in self.drifted and hosts:
                result.hosts[hosts[0]] = ok(changed=1)
            run.phases.append(result)
        return run


def invoke(*args: str) -> int:
    rc = app(args=list(args), prog_name="orchestrator", standalone_mode=False)
    return rc if isinstance(rc, int) else 0


def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drifted: set[str]) -> tuple[Path, Runs]:
    root = copy_ready_site(tmp_path, SITE)
    runs = Runs(tmp_path / "run", drifted)
    monkeypatch.setattr(drift_cmd, "apply", runs)
    monkeypatch.setattr(apply_cmd, "apply", runs)
    return root, runs


def kinds(root: Path) -> list[str]:
    """The recorded runs' kinds, sorted (runs of one second have no order)."""
    with db.connect(root) as conn:
        return sorted(r.kind for r in db.runs(conn, SITE))


@pytest.mark.parametrize("phase", ["serve", "gateway"])
def test_drift_in_serve_or_gateway_is_followed_by_one_heal_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    root, runs = setup(tmp_path, monkeypatch, {phase})
    assert invoke("--root", str(root), "drift", SITE, "--heal") == exits.OK
    check, heal = runs.requests
    assert check.check and not heal.check
    assert [p.name for p in heal.phases] == ["serve", "gateway"]
    assert heal.extra_vars == {"vllm_serve_heal": True, "play_serve_serial": 1}
    assert kinds(root) == ["drift", "heal"]


def test_drift_elsewhere_heals_nothing_and_drift_beside_it_keeps_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, runs = setup(tmp_path, monkeypatch, {"host"})
    assert invoke("--root", str(root), "drift", SITE, "--heal") == exits.HOSTS_FAILED
    assert len(runs.requests) == 1 and kinds(root) == ["drift"]
    runs.drifted = {"host", "serve"}
    assert invoke("--root", str(root), "drift", SITE, "--heal") == exits.HOSTS_FAILED  # host drift stays
    assert len(runs.requests) == 3 and kinds(root) == ["drift", "drift", "heal"]
    runs.drifted = {"serve"}
    assert invoke("--root", str(root), "drift", SITE) == exits.HOSTS_FAILED  # no --heal: report only
    assert len(runs.requests) == 4


def test_heal_alone_runs_the_same_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, runs = setup(tmp_path, monkeypatch, set())
    assert invoke("--root", str(root), "heal", SITE, "--format", "json") == exits.OK
    (req,) = runs.requests
    assert not req.check and [p.name for p in req.phases] == ["serve", "gateway"]
    assert req.extra_vars == {"vllm_serve_heal": True, "play_serve_serial": 1}
    assert kinds(root) == ["heal"]
    limit = ("--limit", "a2-01", "--purge-compile-cache", "--format", "json")
    assert invoke("--root", str(root), "heal", SITE, *limit) == exits.OK
    purge = runs.requests[-1]
    assert purge.extra_vars == {**HEAL, "vllm_serve_cache_purge": True}
    assert purge.hosts == {"a2-01"}


def test_heal_with_a_machine_format_is_a_usage_error(tmp_path: Path) -> None:
    root = copy_ready_site(tmp_path, SITE)
    out = run_cli("--root", str(root), "drift", SITE, "--heal", "--format", "json")
    assert out.returncode == exits.USAGE, out.stderr
    assert "leave --format out" in " ".join(out.stderr.split())
    assert not (root / ".orchestrator" / "runs").exists()


def test_schedule_heal_runs_drift_with_heal(tmp_path: Path) -> None:
    root = copy_ready_site(tmp_path, SITE)
    spec = root / "inventories" / SITE / "site.yaml"
    hook = spec.parent / "webhook-url"
    hook.write_text("http://127.0.0.1:9/hook\n")
    spec.write_text(spec.read_text().replace("env:DRIFT_WEBHOOK_URL", f"file:{hook}"))
    for heal, want in ((True, True), (False, False)):
        out = run_cli(
            "--root", str(root), "drift", "schedule", SITE, "--cron", *(["--heal"] if heal else []),
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        argv = shlex.split(out.stdout.strip().splitlines()[-1])
        assert ("--heal" in argv) is want, argv
