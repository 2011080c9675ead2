"""The host phase's variables: role host_tuning (the plan's tuning, per host with the server's overrides)
and role container_runtime (the engine's packages and daemon.json, on every host that runs containers)."""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import HostPlan, HostTuningPlan, SitePlan
from orchestrator.render.vars.ascend_runtime import ascend_runtime_vars
from orchestrator.render.vars.common import package
from orchestrator.spec.site import SiteSpec


def _tuning(tp: HostTuningPlan) -> dict[str, Any]:
    """The planned settings as role host_tuning applies them (planning/tuning.py decides every value)."""
    return {
        "host_tuning_cpu_governor": tp.governor,
        "host_tuning_sysctls": tp.applied_sysctls,
        "host_tuning_sysfs": dict(tp.sysfs),
        "host_tuning_debugfs": dict(tp.debugfs),
        "host_tuning_skipped": [{"name": s.name, "reason": s.reason} for s in tp.skipped],
    }


def host_tuning_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    """group_vars/npu.yml: the site's tuning (roles/host_tuning/meta/argument_specs.yml)."""
    t, tp = spec.tuning, plan.tuning
    planned = _tuning(tp)
    return {
        "host_tuning_cpu_governor": planned.pop("host_tuning_cpu_governor"),
        **planned,
        "host_tuning_irqbalance": tp.irqbalance,
        "host_tuning_irq_affinity": tp.irq_affinity,
        "host_tuning_rdma_modules": {m: dict(sorted(o.items())) for m, o in sorted(t.rdma_modules.items())},
        "host_tuning_memlock": None if t.memlock is None else str(t.memlock),
    }


def host_tuning_host_vars(plan: SitePlan, host: HostPlan) -> dict[str, Any]:
    """host_vars: the values of this server's planned tuning that differ from the site's (its overrides)."""
    if host.tuning is None:
        return {}
    site, mine = _tuning(plan.tuning), _tuning(host.tuning)
    out = {k: v for k, v in mine.items() if k == "host_tuning_cpu_governor" and v != site[k]}
    if any(mine[k] != site[k] for k in mine if k != "host_tuning_cpu_governor"):
        out.update({k: v for k, v in mine.items() if k != "host_tuning_cpu_governor"})
    return out


def _daemon_config(spec: SiteSpec) -> dict[str, Any]:
    cr = spec.software.container_runtime
    daemon: dict[str, Any] = {
        "log-driver": "json-file",
        "log-opts": {"max-size": cr.log_max_size, "max-file": str(cr.log_max_files)},
        "live-restore": cr.live_restore,
    }
    if cr.data_root:
        daemon["data-root"] = cr.data_root
    return daemon


def container_runtime_vars(plan: SitePlan, spec: SiteSpec) -> dict[str, Any]:
    """group_vars/all.yml: the container engine (role container_runtime, group container_runtime)."""
    return {
        "container_runtime_packages": list(plan.container_runtime_packages),
        "container_runtime_daemon_config": _daemon_config(spec),
    }


def container_runtime_npu_vars(spec: SiteSpec) -> dict[str, Any]:
    """group_vars/npu.yml: the Ascend Docker Runtime and the NPU servers' daemon.json."""
    return ascend_runtime_vars(spec, _daemon_config(spec), package)
