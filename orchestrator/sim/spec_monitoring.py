"""The monitoring section of a simulated cluster's spec. Without `sim up --monitoring` the monitoring phase
is off (`enabled: false`: the planner skips it), so the clusters of the other tests install no Prometheus
or exporter packages. With it: mon-01 runs Prometheus, a short scrape interval lets tests see a change
within seconds, and the NPU servers get the simulator's fake npu-exporter zip with its sha256."""

from __future__ import annotations

from pathlib import Path

from orchestrator.sim.npu_exporter_package import VERSION
from orchestrator.sim.packages import sha256_of
from orchestrator.sim.state import ClusterState

SCRAPE_INTERVAL_S = 5


def monitoring_section(state: ClusterState, npu_exporter: Path | None) -> list[str]:
    """The spec lines; npu_exporter: the fake zip (orchestrator.sim.npu_exporter_package), built when
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
