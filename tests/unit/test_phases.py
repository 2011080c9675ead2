"""What the host phase of `orchestrator phases` says it will do, for tuning written out by hand.

The example sites' golden phases cover governor, sysctls, debugfs and THP; these cases add the parts no
example sets: hugepages, pinned IRQs with irqbalance, and host RDMA module options (named in sorted order)."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.planning.phases import plan_phases
from tests.helpers import load_example, validate_data


def _host_summary(tuning: dict[str, Any]) -> str:
    data = load_example("a2-single-distill")  # Ubuntu 22.04: kernel 5.15, so a sysctl stays a sysctl
    # governor and THP have defaults (performance, always): left to the OS here, so each case names all it
    # sets
    data["tuning"] = {"cpu_governor": None, "transparent_hugepages": None, **tuning}
    result = validate_data(data)
    assert result.spec is not None and result.plan is not None, [f.message for f in result.errors]
    (host,) = [p for p in plan_phases(result.spec, result.plan) if p.name == "host"]
    # the host phase also brings up the container engine (the former runtime phase): a single-server site
    prefix, sep, rest = host.summary.partition(": ")
    tuning, _, engine = rest.rpartition("; ")
    assert (prefix, sep, engine) == ("tuning on 1 NPU server(s)", ": ", "Docker engine on 1 host(s)")
    return tuning


@pytest.mark.parametrize(
    ("tuning", "summary"),
    [
        pytest.param(
            {"sysctls": {}},
            "0 sysctls",
            id="nothing-but-the-sysctl-count",
        ),
        pytest.param(
            {"sysctls": {}, "cpu_governor": "powersave", "transparent_hugepages": "never"},
            "governor powersave, 0 sysctls, THP never",
            id="governor-and-thp",
        ),
        pytest.param(
            {
                "sysctls": {"vm.swappiness": 0},
                "hugepages": {"size_kb": 2048, "count": 1024},
                "rdma_modules": {"mlx5_core": {"prof_sel": 2}, "ib_core": {}},
            },
            "1 sysctls, 1024 hugepages, modprobe options for ib_core, mlx5_core",
            id="hugepages-and-rdma-modules",
        ),
        pytest.param(
            {"sysctls": {}, "irq_affinity": "npu-numa"},
            "0 sysctls, IRQs pinned npu-numa, irqbalance disabled",
            id="pinned-irqs-stop-irqbalance",
        ),
        pytest.param(
            {"sysctls": {}, "irqbalance": "enabled"},
            "0 sysctls, irqbalance enabled",
            id="irqbalance-explicit",
        ),
    ],
)
def test_host_phase_summary(tuning: dict[str, Any], summary: str) -> None:
    assert _host_summary(tuning) == summary


def test_a_setting_the_kernel_has_no_place_for_is_named_as_skipped() -> None:
    """kernels.yaml: kernel.sched_latency_ns left sysctl in Linux 5.13 and its debugfs file went in 6.6
    (EEVDF); openEuler 24.03 runs 6.6, so the host phase says it skips it, and keeps the real sysctl."""
    data = load_example("a2-single-distill")
    data["os"] = {**data["os"], "distro": "openeuler", "version": "24.03"}
    data["monitoring"] = {"enabled": False}  # it needs a Debian-family OS
    data["tuning"] = {
        "cpu_governor": None,
        "transparent_hugepages": None,
        "sysctls": {"kernel.sched_latency_ns": 24000000, "vm.swappiness": 0},
    }
    result = validate_data(data)
    assert result.spec is not None and result.plan is not None, [f.message for f in result.errors]
    (host,) = [p for p in plan_phases(result.spec, result.plan) if p.name == "host"]
    assert host.summary.startswith("tuning on 1 NPU server(s): 1 sysctls, skip kernel.sched_latency_ns; "), (
        host.summary
    )


def _summaries(data: dict[str, Any]) -> dict[str, str]:
    result = validate_data(data)
    assert result.spec is not None and result.plan is not None, [f.message for f in result.errors]
    return {p.name: p.summary for p in plan_phases(result.spec, result.plan)}


def test_weights_and_monitoring_say_what_really_happens() -> None:
    """a2-single-distill stages its weights without manifest_sha256 and names no npu-exporter package:
    before, the phases claimed "checksums verified" and "node and NPU exporters"."""
    data = load_example("a2-single-distill")
    assert "manifest_sha256" not in data["model"].get("source", {}) and "monitoring" not in data
    before = _summaries(data)
    assert before["weights"].endswith(
        "(staged), NOT verified (no model.source.manifest_sha256): only config.json is looked for"
    )
    assert before["monitoring"] == (
        "node exporters only (no NPU metrics: monitoring.npu_exporter names no package), Prometheus on a2-01"
    )
    data["model"]["source"] = {"type": "staged", "manifest_sha256": "c" * 64}
    data["monitoring"] = {"npu_exporter": {"version": "7.1.0", "path": "/srv/x.zip", "sha256": "a" * 64}}
    after = _summaries(data)
    assert after["weights"].endswith("(staged), every file checked against the manifest (sha256)")
    assert after["monitoring"] == "node and NPU exporters, Prometheus on a2-01"
