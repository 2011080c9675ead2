"""The drivers phase's variables (npu_driver, npu_firmware): the packages, where they are staged, how they
install, and the play's batches (planning/drivers.py)."""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import SitePlan
from orchestrator.render.vars.common import package
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.software import PackageSource


def _hdk_package(pkg: PackageSource) -> dict[str, Any]:
    """A driver or firmware package, its version as the host prints it (the portal's 25.0.RC1 is 25.0.rc1
    in version.info and npu-smi)."""
    return {**package(pkg), "version": pkg.version.lower()}


def drivers_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    """group_vars/npu.yml (software.driver / firmware / kernel_headers / reboot / stop_serving)."""
    sw = spec.software
    return {
        "npu_driver_package": _hdk_package(sw.driver),
        "npu_firmware_package": _hdk_package(sw.firmware),
        "npu_driver_cache_dir": plan.drivers.cache_dir,
        "npu_firmware_cache_dir": plan.drivers.cache_dir,
        "npu_driver_kernel_headers": sw.kernel_headers,
        "npu_driver_reboot": sw.reboot.policy,
        "npu_driver_reboot_timeout_s": sw.reboot.timeout_s,
        "npu_driver_stop_serving": sw.stop_serving,
        "npu_driver_holder_services": list(plan.drivers.holder_services),
    }


def drivers_play_vars(plan: SitePlan) -> dict[str, Any]:
    """play_vars.yml: one server alone first, then software.reboot.batch_size at a time."""
    return {
        "play_drivers_serial": list(plan.drivers.serial),
        "play_drivers_max_fail_percentage": 0,  # a failed batch stops the rollout
    }
