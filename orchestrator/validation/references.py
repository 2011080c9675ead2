"""Names, addresses and references between sections."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.planning.roles import hosts_with_role
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.pd_common import instances
from orchestrator.validation.pd_layout_rules import server_references


def _defaulted_without_profile(spec: SiteSpec, index: int) -> bool:
    """The server wrote no roles (so it is an NPU server by default) and no profile."""
    srv = spec.servers[index]
    return "roles" not in srv.model_fields_set and srv.profile is None


def _missing_roles(spec: SiteSpec, name: str) -> list[str]:
    """Roles the spec needs and no server has, those that name this server first."""
    wanted = {
        "gateway": (spec.gateway.enabled, spec.gateway.host),
        "monitoring": (spec.monitoring.enabled, spec.monitoring.host),
        "build": (True, spec.image.build_host),
    }
    named = [role for role, (_, host) in wanted.items() if host == name]
    missing = [
        role
        for role, (on, host) in wanted.items()
        if on and host is None and not hosts_with_role(spec, role) and role not in named
    ]
    return named + missing


def _npu_without_profile(spec: SiteSpec, index: int) -> Finding:
    srv = spec.servers[index]
    profiles = ", ".join(sorted(spec.profiles))
    if not _defaulted_without_profile(spec, index):
        return error(
            ("servers", index, "profile"),
            f"server '{srv.name}' has role 'npu' but no profile",
            f"set profile to one of: {profiles}",
            "reference",
        )
    fits = _missing_roles(spec, srv.name)
    roles = (
        f"roles: [{', '.join(fits)}] (what the spec still lacks)"
        if fits
        else "its roles, e.g. roles: [gateway], [monitoring] or [build]"
    )
    profile = f"profile: {profiles}" if len(spec.profiles) == 1 else f"profile to one of: {profiles}"
    return error(
        ("servers", index),
        f"server '{srv.name}' sets no 'roles', so roles defaults to [npu], and an NPU server needs a "
        "hardware 'profile'",
        f"if '{srv.name}' has no NPUs, set {roles}; if it serves the model, set {profile}",
        "reference",
    )


def check(spec: SiteSpec) -> Iterator[Finding]:
    names: dict[str, int] = {}
    for i, srv in enumerate(spec.servers):
        names.setdefault(srv.name, i)  # duplicates: uniqueness.py
        if srv.profile is not None and srv.profile not in spec.profiles:
            yield error(
                ("servers", i, "profile"),
                f"profile '{srv.profile}' is not defined",
                f"use one of: {', '.join(sorted(spec.profiles))}, or add it under 'profiles'",
                "reference",
            )
        if "npu" in srv.roles and srv.profile is None:
            yield _npu_without_profile(spec, i)
        if len(set(srv.roles)) != len(srv.roles):
            yield error(("servers", i, "roles"), "a role is listed twice", "list each role once", "unique")
    used: set[str] = set()
    for r, rep in enumerate(spec.serving.replicas):
        if len(set(rep.servers)) != len(rep.servers):
            yield error(
                ("serving", "replicas", r, "servers"),
                "a server is listed twice in this replica",
                "list each server once",
                "unique",
            )
        for s, name in enumerate(rep.servers):
            if name not in names:
                yield error(
                    ("serving", "replicas", r, "servers", s),
                    f"server '{name}' is not defined",
                    f"use one of: {', '.join(sorted(names))}",
                    "reference",
                )
            elif "npu" not in spec.servers[names[name]].roles:
                yield error(
                    ("serving", "replicas", r, "servers", s),
                    f"server '{name}' has no 'npu' role",
                    f"add 'npu' to servers[{names[name]}].roles",
                    "reference",
                )
            used.add(name)
    yield from server_references(spec)
    used.update(name for _, _, inst in instances(spec) for name in inst.servers)
    for i, srv in enumerate(spec.servers):
        if "npu" in srv.roles and srv.name not in used and not _defaulted_without_profile(spec, i):
            yield warning(
                ("servers", i, "name"),
                f"NPU server '{srv.name}' serves no replica"
                + (" and no prefill or decode instance" if spec.serving.disaggregation else ""),
                "add it to a replica"
                + (" or an instance" if spec.serving.disaggregation else "")
                + " or remove the 'npu' role",
                "idle",
            )
    for name in spec.profiles:
        if not any(s.profile == name for s in spec.servers):
            yield warning(
                ("profiles", name),
                f"profile '{name}' is not used by any server",
                "remove it or assign it to a server",
                "unused",
            )
    yield from _role_host(spec, names, ("image", "build_host"), spec.image.build_host, "build")
    if spec.gateway.enabled or spec.gateway.host:
        yield from _role_host(spec, names, ("gateway", "host"), spec.gateway.host, "gateway", required=True)
    if spec.monitoring.enabled:
        yield from _role_host(
            spec, names, ("monitoring", "host"), spec.monitoring.host, "monitoring", required=False
        )


def _role_host(
    spec: SiteSpec,
    names: dict[str, int],
    path: tuple[str, str],
    value: str | None,
    role: str,
    required: bool = False,
) -> Iterator[Finding]:
    if value is None:
        if required and not hosts_with_role(spec, role):
            yield error(
                path,
                f"no server has role '{role}'",
                f"add '{role}' to the roles of a server, or set {path[0]}.host",
                "reference",
            )
        return
    if value not in names:
        yield error(
            path, f"server '{value}' is not defined", f"use one of: {', '.join(sorted(names))}", "reference"
        )
    elif role not in spec.servers[names[value]].roles:
        yield error(
            path,
            f"server '{value}' does not have role '{role}'",
            f"add '{role}' to servers[{names[value]}].roles",
            "reference",
        )
