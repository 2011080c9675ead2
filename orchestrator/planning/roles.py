"""Which servers play a role: one answer for planning, phases, the inventory and validation."""

from __future__ import annotations

from typing import Literal

from orchestrator.planning.model import RoleHosts
from orchestrator.spec.site import SiteSpec

SiteRole = Literal["build", "gateway", "monitoring"]
SITE_ROLES: tuple[SiteRole, ...] = ("build", "gateway", "monitoring")


def hosts_with_role(spec: SiteSpec, role: str) -> tuple[str, ...]:
    """Every server that lists role, in spec order."""
    return tuple(s.name for s in spec.servers if role in s.roles)


def explicit_host(spec: SiteSpec, role: SiteRole) -> str | None:
    """The server the spec names for role (image.build_host, gateway.host, monitoring.host), if any."""
    if role == "build":
        return spec.image.build_host
    if role == "gateway":
        return spec.gateway.host
    return spec.monitoring.host


def role_host(spec: SiteSpec, role: SiteRole) -> str | None:
    """The server that plays role: the one named in the spec, else the first with the role.

    The image is built somewhere even when no server has role 'build': on the first NPU server
    (validation warns about it). Gateway and monitoring have no such fallback.
    """
    chosen = explicit_host(spec, role) or next(iter(hosts_with_role(spec, role)), None)
    if chosen is None and role == "build":
        chosen = next(iter(hosts_with_role(spec, "npu")), None)
    return chosen


def container_hosts(spec: SiteSpec) -> tuple[str, ...]:
    """Where a container engine runs (phase host, group container_runtime): every NPU server (serving), the
    build host, the gateway when enabled and the monitoring host when monitoring is enabled."""
    build = role_host(spec, "build")
    gateway = role_host(spec, "gateway") if spec.gateway.enabled else None
    monitoring = role_host(spec, "monitoring") if spec.monitoring.enabled else None
    extra = tuple(h for h in (build, gateway, monitoring) if h)
    return tuple(dict.fromkeys((*hosts_with_role(spec, "npu"), *extra)))


def monitored_hosts(spec: SiteSpec) -> tuple[str, ...]:
    """Where the monitoring phase runs and node_exporter is scraped: every NPU server and the monitoring host
    (none when monitoring is disabled). npu-exporter runs on the NPU servers among them."""
    if not spec.monitoring.enabled:
        return ()
    mon = role_host(spec, "monitoring")
    return tuple(dict.fromkeys((*hosts_with_role(spec, "npu"), *([mon] if mon else ()))))


def role_hosts(spec: SiteSpec) -> RoleHosts:
    """Every answer above, once, for the plan (render and the roles read it from there)."""
    return RoleHosts(
        npu=hosts_with_role(spec, "npu"),
        build=role_host(spec, "build"),
        gateway=role_host(spec, "gateway") if spec.gateway.enabled else None,
        monitoring=role_host(spec, "monitoring") if spec.monitoring.enabled else None,
        container_runtime=container_hosts(spec),
        monitored=monitored_hosts(spec),
    )
