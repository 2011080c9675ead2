"""`npu-smi info -t topo` parsed (module_utils.npu_smi.parse_topo) against the verbatim samples of
ascend-samples.md section 3, and ascend.npu.npu_topology against the simulator's fake npu-smi under a temp
ASCEND_SIM_ROOT. Expected values are read off the samples by hand."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.ascend.npu.plugins.module_utils import npu_smi

from tests.unit.collection.module_runner import run_module
from tests.unit.sim.ascend_fake_helpers import (
    FAKES,
    HW_910B4,
    PYTHON,
    driver_loaded,
    put,
    reference_blocks,
    sample,
)

ALL_HCCS_BUT = {f"NPU{i}": "HCCS" for i in range(8)}


def test_the_910b3_sample_with_its_leading_tab_and_prompt_line() -> None:
    rows = npu_smi.parse_topo(sample("topo_910b3.txt"))
    assert [r["id"] for r in rows] == list(range(8))
    assert [r["cpu_affinity"] for r in rows] == [
        "144-167", "144-167", "96-119", "96-119", "0-23", "0-23", "48-71", "48-71",
    ]  # fmt: skip
    for r in rows:
        assert r["label"] == f"NPU{r['id']}"
        assert r["links"] == {k: v for k, v in ALL_HCCS_BUT.items() if k != r["label"]}


def test_the_910b1_sample_without_the_tab() -> None:
    (block,) = [b for b in reference_blocks() if "multipul" in b and "CPU Affinity" in b]
    rows = npu_smi.parse_topo(block)
    assert [(r["id"], r["cpu_affinity"]) for r in rows] == [
        (0, "144-167"), (1, "0-23"), (2, "144-167"), (3, "0-23"),
        (4, "96-119"), (5, "48-71"), (6, "96-119"), (7, "48-71"),
    ]  # fmt: skip


def test_the_a3_sample_has_phy_ids_sio_and_no_affinity() -> None:
    (block,) = [b for b in reference_blocks() if "Phy-ID12" in b]
    rows = npu_smi.parse_topo(block)
    assert rows == [
        {"label": "Phy-ID12", "id": 12, "links": {"Phy-ID13": "SIO"}, "cpu_affinity": None},
        {"label": "Phy-ID13", "id": 13, "links": {"Phy-ID12": "SIO"}, "cpu_affinity": None},
    ]


def test_cpulists() -> None:
    assert npu_smi.parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert npu_smi.parse_cpulist("") == set() and npu_smi.parse_cpulist("x-1") == set()


def _server(root: Path) -> Path:
    """A 910B4 server with its driver up and npu-smi installed where the driver puts it."""
    driver_loaded(root, HW_910B4, "25.5.1")
    smi = put(root, "/usr/local/sbin/npu-smi", f'#!/bin/sh\nexec {PYTHON} -S {FAKES / "npu_smi.py"} "$@"\n')
    smi.chmod(0o755)
    return root


def test_numa_nodes_from_the_system(tmp_path: Path) -> None:
    root = _server(tmp_path / "r")
    for node in range(8):  # 192 CPUs, 24 per node: the fake's 910B affinities are nodes 6, 4, 0 and 2
        put(root, f"/sys/devices/system/node/node{node}/cpulist", f"{node * 24}-{node * 24 + 23}\n")
    for check_mode in (False, True):
        res = run_module(root, "npu_topology", {}, check_mode=check_mode)
        assert res.get("failed") is None and res["changed"] is False, res.get("msg")
        assert res["source"] == "system"
        got = {k: (v["cpu_affinity"], v["numa_node"]) for k, v in res["npus"].items()}
        assert got == {
            "0": ("144-167", 6), "1": ("144-167", 6), "2": ("96-119", 4), "3": ("96-119", 4),
            "4": ("0-23", 0), "5": ("0-23", 0), "6": ("48-71", 2), "7": ("48-71", 2),
        }  # fmt: skip
        assert res["fact"] == {
            "npus": {k: {"cpu_affinity": a, "numa_node": n} for k, (a, n) in got.items()},
            "numa_source": "system",
        }


def test_numa_nodes_from_the_npus_pci_functions_when_the_system_ones_do_not_hold_them(tmp_path: Path) -> None:
    root = _server(tmp_path / "r")
    put(root, "/sys/devices/system/node/node0/cpulist", "0-1\n")  # a small machine's nodes: no match
    for bus, node, cpus in (("0000:c1:00.0", "6", "144-167"), ("0000:01:00.0", "0", "0-23")):
        for name, text in (("vendor", "0x19e5"), ("numa_node", node), ("local_cpulist", cpus)):
            put(root, f"/sys/bus/pci/devices/{bus}/{name}", text + "\n")
    put(root, "/sys/bus/pci/devices/0000:02:00.0/vendor", "0x15b3\n")  # not an NPU: ignored
    res = run_module(root, "npu_topology", {})
    assert res["source"] == "none"  # the PCI nodes hold 0-23 and 144-167, not 48-71 / 96-119
    assert {v["numa_node"] for v in res["npus"].values()} == {None}
    for bus, node, cpus in (("0000:81:00.0", "4", "96-119"), ("0000:41:00.0", "2", "48-71")):
        for name, text in (("vendor", "0x19e5"), ("numa_node", node), ("local_cpulist", cpus)):
            put(root, f"/sys/bus/pci/devices/{bus}/{name}", text + "\n")
    res = run_module(root, "npu_topology", {})
    assert (
        res["source"] == "pci" and res["npus"]["0"]["numa_node"] == 6 and res["npus"]["6"]["numa_node"] == 2
    )


def test_no_npu_smi_is_a_message_with_the_fix_unless_missing_is_ok(tmp_path: Path) -> None:
    res = run_module(tmp_path / "r", "npu_topology", {})
    assert res["failed"] is True and "run the drivers phase first" in res["msg"]
    res = run_module(tmp_path / "r", "npu_topology", {"missing_ok": True})
    assert res.get("failed") is None and res["present"] is False and res["fact"] == {}
