"""The drivers phase's variables (npu_driver, npu_firmware): where packages are staged, how they install."""

from __future__ import annotations

from typing import Any

from orchestrator.planning import preflight
from orchestrator.spec.site import SiteSpec

# the service the npu_exporter role installs (roles/npu_exporter/defaults/main.yml npu_exporter_service)
NPU_EXPORTER_SERVICE = "npu-exporter"


def drivers_vars(spec: SiteSpec) -> dict[str, Any]:
    """How the driver and firmware roles install (software.kernel_headers, reboot, stop_serving)."""
    sw = spec.software
    return {
        "npu_driver_cache_dir": preflight.PACKAGE_CACHE,
        "npu_firmware_cache_dir": preflight.PACKAGE_CACHE,
        "npu_driver_kernel_headers": sw.kernel_headers,
        "npu_driver_reboot": sw.reboot.policy,
        "npu_driver_reboot_timeout_s": sw.reboot.timeout_s,
        "npu_driver_stop_serving": sw.stop_serving,
        # the exporter holds the device nodes (DCMI) while it runs: stopped for an upgrade, started after
        "npu_driver_holder_services": (
            [NPU_EXPORTER_SERVICE] if spec.monitoring.enabled and spec.monitoring.npu_exporter else []
        ),
    }
