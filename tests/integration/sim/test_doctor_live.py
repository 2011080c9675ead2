"""`orchestrator doctor SITE` live on a served simulated cluster (one Atlas 800T A2 server, every phase
applied once): the converged server is all ok (exit 0); then each fault the simulator injects is named by
its check with the check's fix (exit 3), and cleared again:

- npu-unhealthy (chip Alarm) -> npu-health; link-down -> npu-nic; driver-unloaded (NPUs on the PCI bus,
  npu-smi fails) -> npu-pci; version-info missing -> version-files; firmware-version other than the spec's
  -> firmware-version; a foreign container holding /dev/davinci0 -> npu-held;
- a replica dying with a verbatim public error line (tests/data/doctor/verbatim-lines.yaml) -> serving-log
  with the log rule's fix, and `orchestrator doctor --log` on its saved `docker logs` finds the same rule;
- an unreachable server -> exit 4.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from orchestrator.cli import exits
from orchestrator.doctor.rules import BY_ID
from tests.helpers import ROOT
from tests.integration.sim import goldens
from tests.integration.sim.serving_helpers import sh
from tests.integration.sim.sim_helpers import Sim

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("s1"))]

SERVER = "a2-01"
VERBATIM = yaml.safe_load((ROOT / "tests/data/doctor/verbatim-lines.yaml").read_text(encoding="utf-8"))
DCMI = VERBATIM["samples"]["npu-occupied-dcmi-8005"][0]["lines"][-1]  # vllm-ascend#2698, verbatim


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A copy of the one-server golden, served by one apply of every phase from bare servers (goldens.py)."""
    yield from goldens.module_golden(tmp_path_factory, "s1")


@pytest.fixture(scope="module")
def served(cluster: Sim) -> Sim:
    proc = cluster.converge  # `orchestrator apply SITE --yes --format json` from bare servers
    assert proc is not None and proc.returncode == 0, proc and proc.stdout[-4000:] + proc.stderr[-2000:]
    return cluster


def doctor(sim: Sim) -> tuple[int, dict[str, Any]]:
    proc = sim.cli("doctor", sim.name, "--host", SERVER, "--format", "json", check=False)
    assert proc.stdout.count("\n") == 1, proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def problems(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in doc["findings"]:
        if f["status"] != "ok":
            out.setdefault(f["check"], []).append(f)
    return out


def test_a_converged_server_is_all_ok(served: Sim) -> None:
    rc, doc = doctor(served)
    assert (rc, problems(doc), doc["unreachable"]) == (exits.OK, {}, {}), doc
    checks = {f["check"] for f in doc["findings"]}
    assert {"npu-pci", "version-files", "driver-version", "firmware-version", "driver-firmware"} <= checks
    assert {"npu-health", "npu-held", "serving-log"} <= checks
    table = served.cli("doctor", served.name).stdout
    assert "all ok" in table and "npu-pci" in table


FAULTS = [
    (("npu-unhealthy", SERVER, "0"), "npu-health", "health Alarm", "npu-smi info -t health"),
    (
        ("driver-unloaded", SERVER),
        "npu-pci",
        "npu-smi info fails: dcmi module initialize",
        "--phases drivers",
    ),
    (("version-info", SERVER), "version-files", "driver/version.info is missing", "reinstall the driver"),
    (
        ("firmware-version", SERVER, "--version", "7.7.0.1.231"),
        "firmware-version",
        "installed 7.7.0.1.231",
        "drivers",
    ),
    (
        ("npu-held", SERVER, "--device", "0"),
        "npu-held",
        "holds /dev/davinci0; not a replica here",
        "docker stop",
    ),
]


@pytest.mark.parametrize(("fault", "check", "seen", "fix"), FAULTS, ids=[f[1] for f in FAULTS])
def test_each_fault_is_found_with_its_fix(
    served: Sim, fault: tuple[str, ...], check: str, seen: str, fix: str
) -> None:
    served.sim("fault", *fault)
    try:
        rc, doc = doctor(served)
    finally:
        served.sim("fault", *fault, "--clear")
    found = problems(doc)
    assert rc == exits.DIAGNOSED and check in found, doc
    assert any(seen in f["seen"] and fix in f["fix"] for f in found[check]), found[check]
    assert doctor(served)[0] == exits.OK


def test_a_link_down_is_found(served: Sim) -> None:
    hv = yaml.safe_load(
        (served.root / "inventories" / served.name / "host_vars" / f"{SERVER}.yml").read_text()
    )
    assert hv["hccn_network_devices"], "the simulated A2 server has NPU NICs in the plan"
    served.sim("fault", "link-down", SERVER, "0")
    try:
        rc, doc = doctor(served)
    finally:
        served.sim("fault", "link-down", SERVER, "0", "--clear")
    found = problems(doc)
    assert rc == exits.DIAGNOSED and "device 0: link DOWN" in found["npu-nic"][0]["seen"], doc


def test_an_unreachable_server_exits_4(served: Sim) -> None:
    served.sim("fault", "unreachable", SERVER)
    try:
        rc, doc = doctor(served)
    finally:
        served.sim("fault", "back", SERVER)
    assert rc == exits.HOSTS_UNREACHABLE and SERVER in doc["unreachable"] and problems(doc) == {}, doc


def test_a_replica_dying_with_a_known_error_live_and_from_its_saved_log(served: Sim) -> None:
    hv = yaml.safe_load(
        (served.root / "inventories" / served.name / "host_vars" / f"{SERVER}.yml").read_text()
    )
    container = hv["vllm_serve_instances"][0]["container_name"]
    served.sim("fault", "vllm", SERVER, "--error-line", DCMI)
    try:
        deadline = time.monotonic() + 30
        while (
            time.monotonic() < deadline and DCMI not in sh(served, SERVER, f"docker logs {container} 2>&1")[1]
        ):
            time.sleep(1)
        rc, doc = doctor(served)
        _, log = sh(served, SERVER, f"docker logs {container} 2>&1")
    finally:
        served.sim("fault", "vllm", SERVER, "--clear")
    rule = BY_ID["npu-occupied-dcmi-8005"]
    (f,) = problems(doc)["serving-log"]
    assert rc == exits.DIAGNOSED and f"{container}: {rule.id}" in f["seen"] and f["fix"] == rule.fix, doc
    saved = served.root / "saved.log"
    saved.write_text(log, encoding="utf-8")
    proc = served.cli("doctor", "--log", str(saved), "--format", "json", check=False)
    assert proc.returncode == exits.DIAGNOSED, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["files"][0]["diagnosis"]["rule"] == rule.id
