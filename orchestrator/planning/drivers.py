"""How the drivers phase rolls and installs: batches, the package cache, the services holding the NPUs."""

from __future__ import annotations

from orchestrator.planning.model import DriversPlan
from orchestrator.planning.preflight import PACKAGE_CACHE
from orchestrator.spec.site import SiteSpec

NPU_EXPORTER_SERVICE = "npu-exporter"
"""The service the npu_exporter role installs (roles/npu_exporter/defaults/main.yml npu_exporter_service)."""


def drivers_serial(spec: SiteSpec) -> list[int | str]:
    """`serial` of the drivers play: one server alone first, then the spec's batch size."""
    return [1, spec.software.reboot.batch_size]


def drivers_plan(spec: SiteSpec) -> DriversPlan:
    # the exporter holds the device nodes (DCMI) while it runs: stopped for an upgrade, started after
    exporter = spec.monitoring.enabled and spec.monitoring.npu_exporter is not None
    return DriversPlan(
        serial=tuple(drivers_serial(spec)),
        cache_dir=PACKAGE_CACHE,
        holder_services=(NPU_EXPORTER_SERVICE,) if exporter else (),
    )
