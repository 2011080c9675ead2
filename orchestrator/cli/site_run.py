"""A validated site made ready for a run, shared by apply, plan, drift and rollback: the Ansible content,
the --phases / --from-phase / --limit choices resolved against it and the rendered inventory, and the
runner's ApplyRequest built from them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.planning.phases import PHASE_NAMES, plan_phases
from orchestrator.render.groups import group_members
from orchestrator.runner.apply import ApplyRequest, PhaseChoice
from orchestrator.runner.project import Content, ContentMissing, content, not_implemented_message
from orchestrator.runner.remote import Worker
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import ValidationResult

Phases = Annotated[
    str | None,
    typer.Option("--phases", metavar="P,...", help=f"Only these phases ({', '.join(PHASE_NAMES)})."),
]
FromPhase = Annotated[
    str | None, typer.Option("--from-phase", metavar="P", help="This phase and every later one.")
]
Limit = Annotated[
    str | None,
    typer.Option("--limit", metavar="HOSTS", help="Host and group names, comma-separated."),
]


def _names(value: str) -> list[str]:
    return list(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))


def select_phases(phases: str | None, from_phase: str | None, code: Content) -> tuple[set[str], bool]:
    """The phases to run and whether they were listed explicitly; usage errors name the fix."""
    known = ", ".join(PHASE_NAMES)
    if phases is not None and from_phase is not None:
        raise typer.BadParameter("use either --phases or --from-phase, not both", param_hint="--phases")
    wanted = _names(phases) if phases is not None else [from_phase] if from_phase is not None else []
    hint = "--phases" if phases is not None else "--from-phase"
    if phases is not None and not wanted:
        raise typer.BadParameter(f"name at least one phase ({known})", param_hint=hint)
    for name in wanted:
        if name not in PHASE_NAMES:
            raise typer.BadParameter(f"no phase '{name}'; the phases are {known}", param_hint=hint)
        if not code.implemented(name):
            ready = ", ".join(p for p in PHASE_NAMES if code.implemented(p))
            raise typer.BadParameter(
                f"phase {name} is {not_implemented_message(name)}; phases that run today: {ready}",
                param_hint=hint,
            )
    if phases is not None:
        return set(wanted), True
    if from_phase is not None:
        return set(PHASE_NAMES[PHASE_NAMES.index(from_phase) :]), False
    return set(PHASE_NAMES), False


def resolve_limit(
    limit: str | None, groups: Mapping[str, Iterable[str]], hosts: Iterable[str]
) -> frozenset[str] | None:
    """--limit: host and group names of the rendered inventory (groups: render.groups.group_members of the
    plan), comma-separated."""
    if limit is None:
        return None
    known = set(hosts)
    chosen: set[str] = set()
    for name in _names(limit):
        if name in known:
            chosen.add(name)
        elif name in groups:
            chosen |= set(groups[name])
        else:
            raise typer.BadParameter(
                f"'{name}' is neither a host nor a group of this site; hosts: {', '.join(sorted(known))}; "
                f"groups: {', '.join(sorted(groups))}",
                param_hint="--limit",
            )
    if not chosen:
        raise typer.BadParameter("selects no host", param_hint="--limit")
    return frozenset(chosen)


def ansible_content(root: Path, err: Console) -> Content:
    """The playbooks and roles to run, or exit NO_SITE saying where they were looked for."""
    try:
        return content(root)
    except ContentMissing as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(exits.NO_SITE) from None


@dataclass(frozen=True)
class SiteRun:
    """A valid site (spec and plan), its Ansible content and the hosts --limit selects (None: every host)."""

    site_arg: str
    root: Path
    code: Content
    result: ValidationResult
    spec: SiteSpec
    hosts: frozenset[str] | None
    limit: str | None

    @classmethod
    def of(
        cls, site_arg: str, root: Path, code: Content, result: ValidationResult, limit: str | None
    ) -> SiteRun:
        """`result` must be valid (callers exit 2 before); --limit is resolved against its inventory."""
        if result.spec is None or result.plan is None:  # load exits on an invalid spec
            raise typer.Exit(exits.INVALID_SPEC)
        groups = group_members(result.spec, result.plan)
        hosts = resolve_limit(limit, groups, (h.name for h in result.plan.hosts))
        return cls(site_arg, root, code, result, result.spec, hosts, limit)

    def require_controller(self, selected: Iterable[str], err: Console) -> None:
        """Exit INVALID_SPEC, before any host is contacted, when a secret or a controller-side file the
        selected phases (or "drift") need is missing; each finding names the field, its line and the fix."""
        from orchestrator.spec.findings import format_finding
        from orchestrator.validation.controller import controller_findings, located

        found = located(controller_findings(self.spec, self.inventory_dir, selected), self.result)
        if not found:
            return
        for f in found:
            err.print(format_finding(f, self.result.filename), style="red", markup=False)
        err.print(
            f"{self.result.filename}: refusing to run: {len(found)} thing(s) the controller must hold "
            "for this run are missing; no host was touched",
            style="red",
            markup=False,
        )
        raise typer.Exit(exits.INVALID_SPEC)

    @property
    def spec_file(self) -> Path:
        return Path(self.result.filename)

    @property
    def inventory_dir(self) -> Path:
        return self.spec_file.parent

    def choices(self, selected: set[str], *, implemented_only: bool) -> list[PhaseChoice]:
        """The plan's phases in order, `selected` ones marked; implemented_only keeps only the phases that
        have a playbook (plan and drift: nothing to check otherwise); apply reports the others."""
        assert self.result.plan is not None
        return [
            PhaseChoice(p.name, p.hosts, p.name in selected, self.code.implemented(p.name))
            for p in plan_phases(self.spec, self.result.plan)
            if p.name in selected and (self.code.implemented(p.name) or not implemented_only)
        ]

    def request(
        self,
        phases: list[PhaseChoice],
        *,
        check: bool,
        explicit: bool,
        extra_vars: Mapping[str, Any] | None = None,
        worker: Worker | None = None,
    ) -> ApplyRequest:
        return ApplyRequest(
            site=self.spec.site,
            site_arg=self.site_arg,
            project_root=self.root,
            inventory_dir=self.inventory_dir.resolve(),
            content=self.code,
            phases=phases,
            hosts=self.hosts,
            limit_arg=self.limit,
            check=check,
            explicit_phases=explicit,
            extra_vars=dict(extra_vars or {}),
            worker=worker,
        )
