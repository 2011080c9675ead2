"""The preflight phase's variables: the plan's expectations of every server (planning/preflight.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from orchestrator.planning.model import HostPlan, SitePlan


def preflight_vars(plan: SitePlan) -> dict[str, Any]:
    """group_vars/all.yml: OS, kernel line, time sync."""
    return {"preflight_os": asdict(plan.preflight)}


def preflight_host_vars(host: HostPlan) -> dict[str, Any]:
    """host_vars: the NPUs lspci must show (null without NPUs) and the free disk each path needs."""
    return {
        "preflight_npu": asdict(host.preflight_npu) if host.preflight_npu else None,
        "preflight_disk": [asdict(d) for d in host.disk],
    }
