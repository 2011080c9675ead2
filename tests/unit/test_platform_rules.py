"""Chip-, kernel- and checkpoint-dependent settings: HCCL expansion mode per chip, scheduler sysctls per
kernel, irqbalance only when IRQs are pinned."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from orchestrator.catalog import chips_of_family
from orchestrator.render.inventory import inventory_files
from tests.helpers import validate_data

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ascend"
HCCL_TABLE = FIXTURES / "hccl_op_expansion_mode.txt"
A3_TEXT = FIXTURES / "hccl_op_expansion_mode_a3.txt"  # CANN 9.0 reference, Atlas A3 part
A2_AIV_TEXT = FIXTURES / "hccl_op_expansion_mode_a2_aiv.txt"
CONNECT_TEXT = FIXTURES / "hccl_connect_timeout.txt"
TUTORIAL = (
    Path(__file__).resolve().parents[1]
    / "data/upstream/vllm-ascend/v0.23.0/docs/source/tutorials/models/DeepSeek-R1.md"
)
MODES = ("AIV", "AI_CPU", "HOST")


def _rows() -> dict[str, set[str]]:
    """Product row of the CANN table -> the mode values named in it (cells one per line)."""
    text = HCCL_TABLE.read_text(encoding="utf-8").split("默认值", 1)[1]
    duo, a2 = text.split("Atlas A2 训练系列产品", 1)
    return {
        name: {ln.strip() for ln in part.splitlines()} & set(MODES)
        for name, part in [("duo", duo), ("a2", a2)]
    }


def _hccl_env(data: dict[str, Any]) -> set[str]:
    plan = validate_data(data).plan
    assert plan is not None
    return {dict(m.env).get("HCCL_OP_EXPANSION_MODE", "") for r in plan.replicas for m in r.members}


def test_catalog_modes_follow_the_cann_table() -> None:
    rows = _rows()
    assert rows["duo"] == {"AI_CPU", "HOST"} and "AIV" in rows["a2"]
    for chip in chips_of_family("310p"):
        assert set(chip.hccl_op_expansion_modes) == rows["duo"] and chip.hccl_op_expansion_default == "HOST"
    for chip in chips_of_family("910b"):
        assert chip.hccl_op_expansion_default == "AIV" and set(chip.hccl_op_expansion_modes) <= rows["a2"] | {
            "HOST"
        }


def _a3_modes() -> tuple[set[str], str]:
    """Modes the CANN 9.0 reference lists for Atlas A3 (items 'MODE:' or 'MODE(默认值):'), and the default."""
    listed = re.findall(r"^    • (AIV|AI_CPU|HOST)(\(默认值\))?:", A3_TEXT.read_text(encoding="utf-8"), re.M)
    (default,) = [mode for mode, mark in listed if mark]
    return {mode for mode, _ in listed}, default


def test_a3_modes_follow_the_cann_9_reference(a3: dict[str, Any]) -> None:
    modes, cann_default = _a3_modes()
    assert modes == {"AI_CPU", "AIV"} and cann_default == "AI_CPU"
    for chip in chips_of_family("910_93"):
        assert set(chip.hccl_op_expansion_modes) == modes  # refused AI_CPU, accepted HOST before
        assert "hccl_op_expansion_modes" not in chip.inferred_fields
    a3["serving"]["hccl"] = {"op_expansion_mode": "AI_CPU"}
    assert _hccl_env(a3) == {"AI_CPU"}
    a3["serving"]["hccl"] = {"op_expansion_mode": "HOST"}
    (err,) = [f for f in validate_data(a3).errors if f.code == "hccl"]
    assert "not supported on Atlas 800T A3 (910_93); it accepts AI_CPU, AIV" in err.message
    # AIV across the servers of a supernode is in the A3 reference: one server or several, AIV stays
    assert "超节点内的单机/多机通信" in A3_TEXT.read_text(encoding="utf-8")
    assert all(not chip.hccl_aiv_one_server for chip in chips_of_family("910_93"))


def test_default_mode_is_per_chip_and_topology(
    pair: dict[str, Any], duo: dict[str, Any], single: dict[str, Any]
) -> None:
    # CANN: on A2, AIV AlltoAllV runs within one server only; the two-A2 recipe leaves the variable unset.
    assert "针对AlltoAllV、AlltoAllVC算子,仅支持单机场景" in A2_AIV_TEXT.read_text(encoding="utf-8")
    node0 = TUTORIAL.read_text(encoding="utf-8").split("### 5.2", 1)[1].split("vllm serve", 1)[0]
    assert "HCCL_OP_EXPANSION_MODE" not in node0
    assert _hccl_env(pair) == {""}  # was AIV on both servers of the EP replica
    assert _hccl_env(duo) == {"HOST"}  # was AIV, which the 300I Duo does not support
    assert _hccl_env(single) == {"AIV"}  # one A2 server: AIV, as vllm-ascend's tuning guide sets it


def test_aiv_on_a_two_server_a2_replica_is_refused(pair: dict[str, Any]) -> None:
    pair["serving"]["hccl"] = {"op_expansion_mode": "AIV"}
    (err,) = [f for f in validate_data(pair).errors if f.code == "hccl"]
    assert err.path == ("serving", "hccl", "op_expansion_mode")
    assert "replica 'r1' spans 2 Atlas 800T A2 servers with expert parallelism" in err.message
    assert "within one server only" in err.message and "remove op_expansion_mode" in (err.fix or "")
    pair["serving"]["parallelism"]["ep"] = False
    result = validate_data(pair)
    assert not [f for f in result.errors if f.code == "hccl"]
    (warn,) = [f for f in result.warnings if f.code == "hccl"]
    assert "spans 2 Atlas 800T A2 servers, and CANN" in warn.message
    pair["serving"]["parallelism"]["ep"] = True
    pair["serving"]["hccl"] = {"op_expansion_mode": "HOST"}
    assert _hccl_env(pair) == {"HOST"}


def test_connect_timeout_follows_the_cann_range(pair: dict[str, Any]) -> None:
    low, high = map(int, re.findall(r"取值范围\[(\d+),(\d+)\]", CONNECT_TEXT.read_text(encoding="utf-8"))[0])
    for value, ok in ((low - 1, False), (low, True), (high, True), (high + 1, False)):
        pair["serving"]["hccl"] = {"connect_timeout_s": value}
        path = ("serving", "hccl", "connect_timeout_s")
        errors = [f for f in validate_data(pair).errors if f.path[:3] == path]
        assert bool(errors) != ok, (value, [f.message for f in errors])
    assert low == 120  # the spec accepted 10..119, which CANN refuses


def test_aiv_on_300i_duo_is_refused(duo: dict[str, Any]) -> None:
    duo["serving"]["hccl"] = {"op_expansion_mode": "AIV"}
    (err,) = [f for f in validate_data(duo).errors if f.code == "hccl"]
    assert err.path == ("serving", "hccl", "op_expansion_mode")
    assert "not supported on Atlas 300I Duo (310P3); it accepts AI_CPU, HOST" in err.message
    duo["serving"]["hccl"] = {"op_expansion_mode": "AI_CPU"}
    assert _hccl_env(duo) == {"AI_CPU"}


# ---------------------------------------------------------------------------------- host tuning


def _tuning(data: dict[str, Any]) -> dict[str, Any]:
    result = validate_data(data)
    assert result.plan is not None and result.spec is not None, [f.message for f in result.errors]
    return inventory_files(result.spec, result.plan, "0" * 64)["group_vars/npu.yml"]


def test_sched_migration_cost_follows_the_kernel(pair: dict[str, Any]) -> None:
    # kernel.sched_migration_cost_ns left sysctl in Linux 5.13 (commit "sched: Move SCHED_DEBUG sysctl to
    # debugfs"); openEuler 22.03 runs 5.10, Ubuntu 22.04 5.15, openEuler 24.03 6.6.
    pair["os"] = {"distro": "openeuler", "version": "22.03"}
    old = _tuning(pair)
    assert old["host_tuning_sysctls"]["kernel.sched_migration_cost_ns"] == 50000
    assert old["host_tuning_debugfs"] == {}
    for os in ({"distro": "ubuntu", "version": "22.04"}, {"distro": "openeuler", "version": "24.03"}):
        pair["os"] = os
        new = _tuning(pair)
        assert "kernel.sched_migration_cost_ns" not in new["host_tuning_sysctls"]
        assert new["host_tuning_debugfs"] == {"sched/migration_cost_ns": 50000}
        assert new["host_tuning_sysctls"] == {"kernel.numa_balancing": 0, "vm.swappiness": 0}


def test_settings_gone_from_the_kernel_are_skipped_with_the_reason(pair: dict[str, Any]) -> None:
    pair["os"] = {"distro": "openeuler", "version": "24.03"}
    pair["tuning"]["sysctls"] = {"kernel.sched_latency_ns": 24000000, "vm.swappiness": 0}
    out = _tuning(pair)
    (skip,) = out["host_tuning_skipped"]
    assert skip["name"] == "kernel.sched_latency_ns" and "removed in Linux 6.6" in skip["reason"]
    assert out["host_tuning_sysctls"] == {"vm.swappiness": 0} and out["host_tuning_debugfs"] == {}


def test_irqbalance_is_left_alone_unless_irqs_are_pinned(
    single: dict[str, Any], pair: dict[str, Any]
) -> None:
    single.get("tuning", {}).pop("irqbalance", None)
    out = _tuning(single)
    assert out["host_tuning_irqbalance"] is None and out["host_tuning_irq_affinity"] is None
    pinned = _tuning(pair)  # example: tuning.irq_affinity: npu-numa
    assert pinned["host_tuning_irq_affinity"] == "npu-numa" and pinned["host_tuning_irqbalance"] == "disabled"
    pair["tuning"]["irqbalance"] = "enabled"
    (err,) = [f for f in validate_data(pair).errors if f.code == "tuning"]
    assert err.path == ("tuning", "irqbalance")
