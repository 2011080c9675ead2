"""Output an operator can read in 80 columns: every command's --help, every table, the plan and the phases.

Rendered as a pipe or a CI log sees them (stdout not a terminal) at COLUMNS=80: no line longer than 80
characters, nothing cut with an ellipsis, every run id (what `orchestrator show` takes) whole; and a pipe
honours COLUMNS (a wider COLUMNS gives wider tables, never the 220 columns history once forced)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main
from typer.core import TyperGroup

from orchestrator.cli.app import app, main
from orchestrator.cli.output import console
from tests.helpers import PATIENCE_S, ROOT, run_cli

WIDTH = 80
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")


def too_wide(text: str, width: int = WIDTH) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


def assert_readable(text: str, ids: tuple[str, ...] = (), width: int = WIDTH) -> None:
    """No line over `width`, no ellipsis (a cut value), every one of `ids` whole on one line."""
    assert not too_wide(text, width), "\n".join(too_wide(text, width)) + "\n---\n" + text
    assert "…" not in text, text
    for run_id in ids:
        assert run_id in text, f"{run_id} is cut or missing:\n{text}"


@pytest.fixture
def columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)


# --- help ---------------------------------------------------------------------------------------------


def command_paths() -> Iterator[tuple[list[str], object]]:
    """Every command and subcommand (sim fault ..., drift schedule, weights manifest), loaded."""
    root = typer.main.get_command(app)
    ctx = root.make_context("orchestrator", ["--help"], resilient_parsing=True)

    def walk(cmd: object, path: list[str]) -> Iterator[tuple[list[str], object]]:
        yield path, cmd
        if isinstance(cmd, TyperGroup):
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), [*path, name])

    yield from walk(root, [])


def help_text(capsys: pytest.CaptureFixture[str], path: list[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*path, "--help"])
    assert stop.value.code == 0, path
    return capsys.readouterr().out


def test_every_help_fits_80_columns_and_cuts_nothing(
    columns: None, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = []
    for path, cmd in command_paths():
        text = help_text(capsys, path)
        seen.append(" ".join(path))
        assert_readable(text)
        assert "<bool>" not in text, f"orchestrator {' '.join(path)} --help shows a flag as taking a value"
        flat = " ".join(text.split())
        assert " ".join((getattr(cmd, "help", None) or "").split()[:12]) in flat, path  # re-flowed, whole
        if isinstance(cmd, TyperGroup):  # every subcommand listed with its whole first paragraph
            ctx = cmd.make_context(cmd.name or "orchestrator", ["--help"], resilient_parsing=True)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                first = (sub.help or "").split("\n\n")[0] if sub is not None else ""
                assert " ".join(first.split()) in flat, (path, name)  # whole, not cut to one line
    assert {"sim fault npu-unhealthy", "drift schedule", "weights manifest", "validate"} <= set(seen)


def test_every_option_says_what_it_does() -> None:
    """An option without help (validate's -q was one) is an option nobody can guess."""
    undocumented = []
    for path, cmd in command_paths():
        for param in getattr(cmd, "params", []):
            if getattr(param, "param_type_name", "") == "option" and not getattr(param, "help", None):
                undocumented.append(f"orchestrator {' '.join(path)} {param.opts[0]}")
    assert undocumented == []


def test_exit_code_sentences_are_reflowed_not_broken_mid_line(
    columns: None, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_text(capsys, ["apply"])
    lines = [line.strip() for line in text.splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("Exit codes:"))
    paragraph = lines[at : lines.index("", at)]
    assert all(len(line) > 60 for line in paragraph[:-1]), paragraph  # filled to the width, not broken


def test_a_piped_help_honours_columns() -> None:
    narrow = run_cli("drift", "schedule", "--help", env={"COLUMNS": "60"})
    assert narrow.returncode == 0 and not too_wide(narrow.stdout, 60), narrow.stdout
    assert "/var/lib/prometheus/node-exporter" in narrow.stdout  # a default is never cut


# --- history and show, as the commands print them ----------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.unit.history.test_history_cli import record_runs

    root = tmp_path_factory.mktemp("history")
    record_runs(root)
    return root


RECORDED = ("20261204T230000Z-cccccc", "20261204T220000Z-bbbbbb", "20261204T210000Z-aaaaaa")


def piped(root: Path, *args: str, columns: int) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "--root", str(root), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
        env={**__import__("os").environ, "COLUMNS": str(columns)},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_history_fits_80_columns_with_whole_run_ids(recorded: Path) -> None:
    text = piped(recorded, "history", "lab", columns=80)
    assert_readable(text, RECORDED)
    assert "preflight ok," in text and "interrupted" in text  # the phases keep a readable column


def test_history_and_show_honour_columns_when_piped(recorded: Path) -> None:
    wide = piped(recorded, "history", "lab", columns=120)
    assert_readable(wide, RECORDED, width=120)
    assert "preflight ok, drivers interrupted" in wide and too_wide(wide, 80)  # the room is used
    for columns in (80, 120):
        assert_readable(piped(recorded, "show", "20261204T21", columns=columns), RECORDED[2:], columns)


# --- the other tables, printed on the console the commands use ------------------------------------------


def printed(capsys: pytest.CaptureFixture[str], draw: object) -> str:
    out = console()
    assert not out.is_terminal and out.width == WIDTH
    draw(out)  # type: ignore[operator]
    return capsys.readouterr().out


def test_status_tables_fit_80_columns(columns: None, capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli.status_view import print_status
    from orchestrator.history.db import RunRecord
    from orchestrator.history.last_runs import last_per_phase
    from orchestrator.planning.phases import PHASE_NAMES
    from orchestrator.status.fleet import FleetState, ReplicaState

    run = RunRecord(
        run_id="20261204T210000Z-aaaaaa",
        kind="apply",
        site="lab",
        started="2026-12-04T21:00:00Z",
        ended="2026-12-04T21:31:07Z",
        result="ok",
        exit_code=0,
        phases=[{"name": n, "status": "ok", "seconds": 3.0} for n in PHASE_NAMES[:-2]]
        + [{"name": "gateway", "status": "not_implemented", "seconds": 0.0}],
    )
    replica = ReplicaState(
        replica="r-distill-70b-canary",
        head="a2-edge-rack04-01",
        members=["a2-edge-rack04-01"],
        url="http://10.120.201.111:8000",
        healthy=False,
        health="no answer: connection refused",
        requests_running=12.0,
        in_gateway=False,
        release="0123456789abcdef",
        image_id="sha256:" + "ab" * 32,
        since="2026-12-04T20:00:00Z",
    )
    fleet = FleetState([replica, replica], "http://10.120.201.100:8080")
    text = printed(capsys, lambda out: print_status(out, "lab", last_per_phase([run], PHASE_NAMES), fleet))
    assert_readable(
        text, ("20261204T210000Z-aaaaaa", "0123456789abcdef", "abababababab", "2026-12-04 20:00:00")
    )
    assert "never run" in text


def test_apply_plan_drift_doctor_and_bench_tables_fit_80_columns(
    columns: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from orchestrator.bench.client import LevelRun, Sample
    from orchestrator.bench.report import print_table as print_bench
    from orchestrator.bench.slo import all_checks
    from orchestrator.bench.stats import level_stats
    from orchestrator.cli.apply_view import LiveProgress, print_outcome
    from orchestrator.cli.plan_view import print_plan_report
    from orchestrator.doctor.live_finding import Finding, Status
    from orchestrator.doctor.live_report import LiveReport, print_report
    from orchestrator.drift.outputs_table import print_table as print_drift
    from orchestrator.drift.report import build_report
    from orchestrator.runner.events import PhaseTracker
    from orchestrator.runner.plan_report import plan_report
    from orchestrator.spec.bench import BenchSlo
    from tests.unit.drift.drift_runs import drift_run

    run = drift_run()
    run.artifacts = "/srv/orchestrator/.orchestrator/runs/a2-fleet/20261204T210500Z-def456"
    assert_readable(printed(capsys, lambda out: print_outcome(out, run, 3)), (run.run_id,))
    assert_readable(printed(capsys, lambda out: print_plan_report(out, plan_report(run), 0)), (run.run_id,))
    report = build_report(run, hosts_by_phase={"network": ["a2-01", "a2-02"]}, seconds=12.3)
    drift = printed(capsys, lambda out: print_drift(out, report))
    assert_readable(drift, (run.run_id,))
    assert "25.0.rc1 (takes effect after a\n        reboot)" in drift  # wrapped, not cropped

    tracker = PhaseTracker("host")
    for host in ("a2-edge-rack04-01", "a2-edge-rack04-02"):
        tracker.host(host)
    tracker.current_task = "Write the Docker daemon configuration (/etc/docker/daemon.json)"
    live = printed(
        capsys, lambda out: out.print(LiveProgress.render(tracker), soft_wrap=False)
    )  # as Live does
    assert_readable(live, ("a2-edge-rack04-01",))

    found = [
        Finding("a2-01", "driver", Status.fail, "npu-smi: 8 NPUs, lspci: 16 NPUs on the PCI bus", "reboot"),
        Finding("a2-01", "version.info", Status.ok, "/usr/local/Ascend/driver/version.info: 25.5.1"),
    ]
    doctor = LiveReport("a2-fleet", found, {"a2-02": "ssh: connect to host 10.20.1.12 port 22: timed out"})
    assert_readable(printed(capsys, lambda out: print_report(out, doctor, ["a2-01", "a2-02"])))

    ok = Sample(True, ttft_s=1234.5, itl_s=[0.01, 2.02], latency_s=99999.2, output_tokens=3)
    levels = [level_stats(LevelRun(c, 2.0, [ok, ok, Sample(False, "connection refused")])) for c in (1, 64)]
    checks = all_checks(levels, BenchSlo(ttft_p99_ms=50, itl_p99_ms=25, min_request_throughput_rps=0.5))
    header = "bench of a2-fleet: http://10.120.201.100:8080/v1, model deepseek-r1-distill-70b"
    assert_readable(printed(capsys, lambda out: print_bench(out, header, levels, checks)))


# --- the plan and the phases (validate, phases, examples) -----------------------------------------------


@pytest.mark.parametrize("command", ["validate", "phases"])
def test_plan_and_phases_lines_fit_80_columns(command: str) -> None:
    for site in ("a2-pair-r1-w8a8", "a2-fleet-gateway", "duo-300i-distill"):
        out = run_cli(command, site, env={"COLUMNS": "80"})
        assert out.returncode == 0, out.stderr
        assert_readable(out.stdout)
        wide = run_cli(command, site, env={"COLUMNS": "200"})
        assert too_wide(wide.stdout), "a wide terminal gets long lines, not 80 columns"


def test_sim_status_is_a_table_that_fits_and_has_json(
    columns: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascend_sim import faults
    from ascend_sim.faults import ServerStatus
    from ascend_sim.state import ClusterState

    state = ClusterState("sim", "atlas-800t-a2", 2, True, True, 2, "mixed")
    rows = [
        ServerStatus(f"a2-0{i}", f"127.0.0.{10 + i}", "npu,build", "running", "up", "25.5.1", "-")
        for i in (1, 2)
    ]
    rows.append(
        ServerStatus(
            "gw-01", "127.0.0.13", "gateway", "running", "down", "-", "unreachable (stop), disk-full"
        )
    )
    monkeypatch.setattr(faults, "known_clusters", lambda root: ["sim"])
    monkeypatch.setattr(faults, "status", lambda root, name: (state, rows))
    for argv in (["sim", "status"], ["sim", "status", "--format", "json"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 0
        text = capsys.readouterr().out
        if "json" in argv:
            doc = json.loads(text)
            assert doc["clusters"][0]["servers"][2]["faults"] == "unreachable (stop), disk-full"
        else:
            assert_readable(text, ("127.0.0.13", "unreachable (stop),"))


# --- one --format vocabulary ----------------------------------------------------------------------------


def test_every_format_option_says_table_or_json_and_text_still_works(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """table|json everywhere (drift adds junit and prometheus); `text`, the old word of validate, apply and
    rollback, is accepted without being shown."""
    formats = {}
    for path, cmd in command_paths():
        for param in getattr(cmd, "params", []):
            if "--format" in getattr(param, "opts", ()):
                shown, _ = param.get_help_record(typer.Context(cmd))  # type: ignore[arg-type]
                formats[" ".join(path)] = shown
    assert formats.pop("drift check") == "--format <table|json|junit|prometheus>"
    assert set(formats.values()) == {"--format <table|json>"}, formats
    assert {"phases", "validate", "apply", "rollback", "history", "show", "status", "plan"} <= set(formats)
    with pytest.raises(SystemExit) as stop:
        main(["validate", "-q", "--format", "text", "a2-pair-r1-w8a8"])
    assert stop.value.code == 0
    out = run_cli("phases", "--format", "xml", "a2-pair-r1-w8a8")
    assert out.returncode == 64 and "'xml' is not one of 'table', 'json'." in out.stderr


def test_phases_has_json() -> None:
    out = run_cli("phases", "a2-pair-r1-w8a8", "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["site"] == "a2-pair-r1-w8a8"
    assert [p["name"] for p in doc["phases"]][:3] == ["preflight", "drivers", "host"]
    gateway = next(p for p in doc["phases"] if p["name"] == "gateway")
    assert (
        gateway["hosts"] == []
        and gateway["skipped"] is True
        and gateway["playbook"] == "playbooks/gateway.yml"
    )
    assert all(p["implemented"] for p in doc["phases"])
