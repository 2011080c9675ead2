"""`orchestrator drift` of the host-layer phases on a copy of the hl golden (three Atlas 800T A2 servers and
a monitoring host over real SSH, host layer converged), for two of its servers (`--limit a2-01,a2-02`; the
whole cluster's check run is test_host_layer_e2e's): exit 0 after the converging apply; exit 3 after a
manual edit on one server, the JSON naming exactly that host and phase, the JUnit file validating against
the upstream JUnit schema and the textfile parsing with prometheus_client's parser, both showing it; exit 4
with one server unreachable (found by the first phase, preflight). The tests run in file order on one
module-scoped copy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from junitparser import Failure, JUnitXml
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.sim import goldens
from tests.integration.sim.sim_helpers import REPO, Sim

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("hl"))]

HOST_LAYER = "preflight,drivers,host,network"
HOSTS = ["a2-01", "a2-02"]
DRIFTED = "a2-02"
XSD = REPO / "tests" / "data" / "junit" / "junit-10.xsd"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A copy of the hl golden: the host layer applied once from bare servers (goldens.py)."""
    yield from goldens.module_golden(tmp_path_factory, "hl")


def drift(sim: Sim, tag: str, phases: str = HOST_LAYER) -> tuple[int, dict[str, Any], Path, Path]:
    """`orchestrator drift SITE --format json` of a2-01 and a2-02 with the JUnit and textfile outputs: exit
    code, JSON, files."""
    junit = sim.root / "out" / f"{tag}.xml"
    prom = sim.root / "out" / f"orchestrator_drift_{tag}.prom"
    proc = sim.cli(
        "drift", sim.name, "--phases", phases, "--limit", ",".join(HOSTS), "--format", "json",
        "--junit", str(junit), "--textfile", str(prom), check=False,
    )  # fmt: skip
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), junit, prom


def states(report: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(c["host"], c["phase"]): c["state"] for c in report["cells"]}


def metrics(prom: Path) -> dict[tuple[str, str | None, str | None], float]:
    return {
        (s.name, s.labels.get("host"), s.labels.get("phase")): s.value
        for family in text_string_to_metric_families(prom.read_text())
        for s in family.samples
    }


def test_in_sync_after_converge_exits_0(sim: Sim) -> None:
    applied = sim.converge  # `orchestrator apply SITE --yes --phases HOST_LAYER --format json` from bare
    assert applied is not None and goldens.GOLDENS["hl"].phases == HOST_LAYER
    assert applied.returncode == 0, applied.stdout[-3000:] + applied.stderr[-3000:]
    rc, report, junit, prom = drift(sim, "clean")
    assert rc == 0, report
    assert report["verdict"] == "in_sync"
    cells = states(report)
    assert {h for h, _ in cells} == set(HOSTS)
    assert {p for _, p in cells} == set(HOST_LAYER.split(","))
    assert set(cells.values()) == {"in_sync"}, cells
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    got = metrics(prom)
    assert got[("orchestrator_drift_last_run_exit_code", None, None)] == 0
    assert all(v == 0 for (name, _, _), v in got.items() if name == "orchestrator_drift")


def test_a_manual_edit_is_drift_on_that_host_and_phase_exit_3(sim: Sim) -> None:
    sim.exec(DRIFTED, "sysctl -w vm.swappiness=33")
    try:
        rc, report, junit, prom = drift(sim, "edited")
        assert sim.exec(DRIFTED, "sysctl -n vm.swappiness").strip() == "33"  # check mode left it
    finally:
        sim.exec(DRIFTED, "sysctl -w vm.swappiness=0")
    assert rc == 3, report
    drifted = {k: v for k, v in states(report).items() if v != "in_sync"}
    assert drifted == {(DRIFTED, "host"): "drift"}, drifted
    assert report["drifted_hosts"] == [DRIFTED]
    cell = next(c for c in report["cells"] if c["state"] == "drift")
    assert cell["change_count"] >= 1
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    failed = [(c.classname, c.name) for c in suite if any(isinstance(r, Failure) for r in c.result)]
    assert failed == [("host", DRIFTED)]
    got = metrics(prom)
    assert got[("orchestrator_drift", DRIFTED, "host")] == 1
    assert got[("orchestrator_drift", "a2-01", "host")] == 0
    assert got[("orchestrator_drift_last_run_exit_code", None, None)] == 3


def test_an_unreachable_server_without_drift_exits_4(sim: Sim) -> None:
    sim.sim("fault", "unreachable", DRIFTED)
    try:
        rc, report, junit, prom = drift(sim, "unreachable", "preflight")
    finally:
        sim.sim("fault", "back", DRIFTED)
    assert rc == 4, report
    assert report["unreachable_hosts"] == [DRIFTED]
    assert report["drifted_hosts"] == []
    cells = states(report)
    assert cells == {(DRIFTED, "preflight"): "unreachable", ("a2-01", "preflight"): "in_sync"}, cells
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    got = metrics(prom)
    assert got[("orchestrator_drift_host_unreachable", DRIFTED, None)] == 1
    assert got[("orchestrator_drift_host_unreachable", "a2-01", None)] == 0
    assert got[("orchestrator_drift_last_run_exit_code", None, None)] == 4
