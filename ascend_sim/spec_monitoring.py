"""The monitoring section of a simulated cluster's spec. Without `sim up --monitoring` the monitoring phase
is off (`enabled: false`: the planner skips it), so the clusters of the other tests install no Prometheus
or exporter packages. With it: mon-01 runs Prometheus at the spec's default scrape interval, and the NPU
servers get the simulator's fake npu-exporter zip with its sha256.

The interval is the default (15 s), not shorter: every scrape of a simulated NPU server's node exporter
reads thousands of files of its emulated /sys (192 CPUs' cpufreq and topology) through the emulated
kernel's Python FUSE daemon. At 5 s, the node exporters and the daemons of a 3-server cluster took 0.85 of
a core (measured: 0.28 CPU-s per second per NPU server) for as long as the cluster ran."""

from __future__ import annotations

from pathlib import Path

from ascend_sim.npu_exporter_package import VERSION
from ascend_sim.packages import sha256_of
from ascend_sim.state import ClusterState

SCRAPE_INTERVAL_S = 15  # the spec's default (orchestrator/spec/operations.py)


def monitoring_section(state: ClusterState, npu_exporter: Path | None) -> list[str]:
    """The spec lines; npu_exporter: the fake zip (ascend_sim.npu_exporter_package), built when
    monitoring is on."""
    if not state.monitoring or npu_exporter is None:
        return ["monitoring:  # `sim up --monitoring` turns the monitoring phase on", "  enabled: false"]
    pkg = npu_exporter.resolve()
    return [
        "monitoring:  # Prometheus on mon-01; the fake npu-exporter serves the simulated chips' state",
        f"  scrape_interval_s: {SCRAPE_INTERVAL_S}",
        "  npu_exporter:",
        f"    version: {VERSION}",
        f"    path: {pkg}",
        f"    sha256: {sha256_of(pkg)}",
    ]
