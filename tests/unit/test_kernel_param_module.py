"""ascend.npu.kernel_param and ascend.npu.npu_irqs, run as Ansible runs a module (a JSON args file), on files
shaped like the kernel's (a choice file shows "always [madvise] never") in a temp dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

MODULES = Path(__file__).resolve().parents[2] / "collections/ansible_collections/ascend/npu/plugins/modules"


def run_module(name: str, tmp: Path, args: dict[str, Any], check: bool = False) -> dict[str, Any]:
    path = tmp / "args.json"
    full = {**args, "_ansible_check_mode": check, "_ansible_diff": True}
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": full}))
    proc = subprocess.run(
        [sys.executable, str(MODULES / f"{name}.py"), str(path)], capture_output=True, text=True, check=False
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def attr(tmp: Path, rel: str, text: str) -> Path:
    p = tmp / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_bracketed_choice_compares_the_active_one(tmp_path: Path) -> None:
    thp = attr(tmp_path, "thp/enabled", "always [madvise] never\n")
    res = run_module("kernel_param", tmp_path, {"settings": {str(thp): "madvise"}})
    assert res["changed"] is False and res["current"] == {str(thp): "madvise"}
    res = run_module("kernel_param", tmp_path, {"settings": {str(thp): "always"}}, check=True)
    assert res["changed"] is True and res["changed_paths"] == [str(thp)]
    assert res["diff"] == {"before": f"{thp}: madvise\n", "after": f"{thp}: always\n"}
    assert thp.read_text() == "always [madvise] never\n"  # check mode wrote nothing
    res = run_module("kernel_param", tmp_path, {"settings": {str(thp): "always"}})
    assert res["changed"] is True and thp.read_text() == "always\n"


def test_glob_sets_every_match_and_counts_only_differences(tmp_path: Path) -> None:
    for cpu, gov in ((0, "performance"), (1, "schedutil"), (10, "schedutil")):
        attr(tmp_path, f"cpu/cpu{cpu}/cpufreq/scaling_governor", gov + "\n")
    pattern = str(tmp_path / "cpu/cpu[0-9]*/cpufreq/scaling_governor")
    res = run_module("kernel_param", tmp_path, {"settings": {pattern: "performance"}})
    assert sorted(Path(p).parts[-3] for p in res["changed_paths"]) == ["cpu1", "cpu10"]
    assert run_module("kernel_param", tmp_path, {"settings": {pattern: "performance"}})["changed"] is False


def test_a_glob_matching_nothing_skips_with_the_reason_as_a_warning(tmp_path: Path) -> None:
    """A server without a cpufreq driver has no scaling_governor file: with missing=skip the module goes on
    and warns with the path and the caller's reason; with the default it fails naming the path."""
    pattern = str(tmp_path / "cpu/cpu[0-9]*/cpufreq/scaling_governor")
    args = {"settings": {pattern: "performance"}, "missing": "skip", "missing_reason": "no cpufreq driver"}
    res = run_module("kernel_param", tmp_path, args)
    assert res.get("failed") is None and res["changed"] is False and res["missing"] == [pattern], res
    said = [w["event"]["msg"] if isinstance(w, dict) else w for w in res["warnings"]]  # ansible-core 2.19+
    assert said == [f"No kernel attribute at {pattern}, skipped: no cpufreq driver"]
    failed = run_module("kernel_param", tmp_path, {"settings": {pattern: "performance"}})
    assert failed["failed"] and pattern in failed["msg"]


def test_cpu_lists_and_module_booleans_compare_by_meaning(tmp_path: Path) -> None:
    aff = attr(tmp_path, "irq/2753/smp_affinity_list", "144-147,150\n")
    flag = attr(tmp_path, "module/mlx5_core/parameters/probe_vf", "Y\n")
    settings = {str(aff): "144,145,146,147,150", str(flag): "1"}
    assert run_module("kernel_param", tmp_path, {"settings": settings})["changed"] is False
    res = run_module("kernel_param", tmp_path, {"settings": {str(flag): "0"}}, check=True)
    assert res["changed"] is True


def test_missing_attribute_fails_with_a_fix_or_is_skipped(tmp_path: Path) -> None:
    gone = str(tmp_path / "sys/kernel/debug/sched/migration_cost_ns")
    res = run_module("kernel_param", tmp_path, {"settings": {gone: "50000"}})
    assert res["failed"] is True and "No kernel attribute at" in res["msg"] and "Fix:" in res["msg"]
    res = run_module("kernel_param", tmp_path, {"settings": {gone: "50000"}, "missing": "skip"})
    assert res["changed"] is False and res["missing"] == [gone]


def test_npu_irqs_maps_each_npu_msi_to_its_local_cpus(tmp_path: Path) -> None:
    sys.path.insert(0, str(MODULES))
    try:
        import npu_irqs  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(MODULES))
    for bus, cls, vendor, cpus, irqs in (
        ("0000:c1:00.0", "0x120000", "0x19e5", "144-167", (2753, 2754)),
        ("0000:7d:00.0", "0x020000", "0x19e5", "0-23", (100,)),  # a Huawei NIC, not an NPU
        ("0000:01:00.0", "0x120000", "0x10de", "0-23", (200,)),  # another vendor's accelerator
    ):
        attr(tmp_path, f"{bus}/class", cls + "\n")
        attr(tmp_path, f"{bus}/vendor", vendor + "\n")
        attr(tmp_path, f"{bus}/numa_node", "6\n")
        attr(tmp_path, f"{bus}/local_cpulist", cpus + "\n")
        for irq in irqs:
            attr(tmp_path, f"{bus}/msi_irqs/{irq}", "msi\n")
    found = npu_irqs.npus(str(tmp_path))
    assert found == [
        {"bus": "0000:c1:00.0", "numa_node": 6, "local_cpulist": "144-167", "irqs": [2753, 2754]}
    ]
