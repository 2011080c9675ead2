"""drift's outputs, read back with upstream tools: the JUnit XML validates against the Jenkins xunit
plugin's junit-10.xsd (tests/data/junit/) and parses with junitparser; the Prometheus textfile parses with
prometheus_client's own text parser; the JSON and the table say the same as the report."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from orchestrator.drift.outputs_json import report_json
from orchestrator.drift.outputs_junit import junit_text, write_junit
from orchestrator.drift.outputs_prometheus import (
    registry_for,
    run_only_registry,
    textfile_text,
    write_textfile,
)
from orchestrator.drift.outputs_table import print_table
from orchestrator.drift.report import DriftReport, build_report
from tests.helpers import ROOT
from tests.unit.drift.drift_runs import clean_run, drift_run

XSD = ROOT / "tests" / "data" / "junit" / "junit-10.xsd"
WHEN = datetime(2026, 12, 4, 21, 6, 7, 123456, tzinfo=UTC)


def drifted() -> DriftReport:
    return build_report(
        drift_run(), hosts_by_phase={"network": ["a2-01", "a2-02"]}, seconds=12.3456, finished=WHEN
    )


def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def test_junit_validates_against_the_upstream_schema(tmp_path: Path) -> None:
    # 0.1 + 0.2 seconds prints with 17 decimals; the schema allows three
    for report in (drifted(), build_report(clean_run(), seconds=0.1 + 0.2, finished=WHEN)):
        path = tmp_path / "drift.xml"
        write_junit(report, path)
        schema().validate(str(path))
        schema().validate(junit_text(report))
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_schema_refuses_what_it_should() -> None:
    """The vendored schema is real: a test case without a name does not validate."""
    bad = junit_text(drifted()).replace('name="a2-01"', "", 1)
    assert not schema().is_valid(bad)


def test_junit_has_one_case_per_host_and_phase(tmp_path: Path) -> None:
    path = tmp_path / "drift.xml"
    write_junit(drifted(), path)
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    cases = {(c.classname, c.name): c for c in suite}
    assert len(cases) == 11
    assert suite.tests == 11
    assert suite.failures == 2
    assert suite.errors == 1
    assert suite.skipped == 4
    drift = cases[("host", "a2-02")].result
    assert len(drift) == 1
    assert isinstance(drift[0], Failure)
    assert drift[0].type == "drift"
    assert "vm.swappiness 60 -> 10" in (drift[0].text or "")
    assert '+{"log-driver": "json-file"}' in (drift[0].text or "")
    gone = cases[("preflight", "a2-03")].result
    assert isinstance(gone[0], Error)
    assert gone[0].type == "unreachable"
    assert "port 22" in (gone[0].message or "")
    assert isinstance(cases[("network", "a2-01")].result[0], Skipped)
    assert cases[("preflight", "a2-01")].is_passed
    props = {p.name: p.value for p in suite.properties()}
    assert props == {
        "site": "a2-fleet",
        "run_id": "20261204T210500Z-def456",
        "verdict": "drift",
        "exit_code": "3",
    }


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def key(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted({"site": "a2-fleet", **labels}.items()))


def test_textfile_parses_with_the_prometheus_parser(tmp_path: Path) -> None:
    path = tmp_path / "orchestrator_drift_a2-fleet.prom"
    write_textfile(registry_for(drifted()), path)
    got = samples(path.read_text())
    assert got[key("orchestrator_drift", host="a2-02", phase="host")] == 1
    assert got[key("orchestrator_drift_changes", host="a2-02", phase="host")] == 2
    assert got[key("orchestrator_drift", host="a2-01", phase="host")] == 0
    assert got[key("orchestrator_drift", host="a2-01", phase="drivers")] == 1
    assert key("orchestrator_drift", host="a2-03", phase="preflight") not in got  # unknown, not in sync
    assert key("orchestrator_drift", host="a2-01", phase="network") not in got
    assert got[key("orchestrator_drift_host_unreachable", host="a2-03")] == 1
    assert got[key("orchestrator_drift_host_unreachable", host="a2-01")] == 0
    assert got[key("orchestrator_drift_cells", state="drift")] == 2
    assert got[key("orchestrator_drift_cells", state="not_run")] == 4
    assert got[key("orchestrator_drift_last_run_exit_code")] == 3
    assert got[key("orchestrator_drift_last_run_timestamp_seconds")] == WHEN.timestamp()
    assert got[key("orchestrator_drift_last_run_duration_seconds")] == 12.3456
    assert textfile_text(registry_for(drifted())) == path.read_text()
    assert not [p for p in tmp_path.iterdir() if p != path]  # written through a temporary file, renamed


def test_an_invalid_spec_still_leaves_its_exit_code() -> None:
    got = samples(textfile_text(run_only_registry("a2-fleet", WHEN, 0.5, 2)))
    assert got == {
        key("orchestrator_drift_last_run_timestamp_seconds"): WHEN.timestamp(),
        key("orchestrator_drift_last_run_duration_seconds"): 0.5,
        key("orchestrator_drift_last_run_exit_code"): 2,
    }


def test_json_and_table() -> None:
    data = json.loads(report_json(drifted()))
    assert data["exit_code"] == 3
    assert data["drifted_hosts"] == ["a2-01", "a2-02"]
    assert data["unreachable_hosts"] == ["a2-03"]
    cell = next(c for c in data["cells"] if c["host"] == "a2-02" and c["phase"] == "host")
    assert [c["kind"] for c in cell["changes"]] == ["sysctl", "file"]
    buf = io.StringIO()
    print_table(Console(file=buf, width=200, color_system=None), drifted())
    text = buf.getvalue()
    assert "DRIFT: a2-02 in host:" in text
    assert "UNREACHABLE: a2-03 in preflight:" in text
    assert (
        "drift of a2-fleet: drift (exit 3); host x phase: 4 in sync, 2 drift, 1 unreachable, 4 not run"
        in text
    )


def test_the_table_prints_a_change_in_brackets_as_text() -> None:
    """A task's words with a path in brackets (a loop label) are not console markup: rich would refuse
    "[/var/cache/...]" as a closing tag, and the drift run would end in an internal error."""
    run = drift_run()
    (host,) = [p for p in run.phases if p.name == "host"]
    first = host.changes[0]
    host.changes[0] = replace(first, task="remove [/var/cache/ascend-orchestrator/compile/dcf1dded510eae25]")
    buf = io.StringIO()
    report = build_report(run, seconds=1.0, finished=WHEN)
    print_table(Console(file=buf, width=300, color_system=None), report)
    assert "[/var/cache/ascend-orchestrator/compile/dcf1dded510eae25]" in buf.getvalue()
