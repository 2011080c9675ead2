"""An apply: the selected phases in order, one ansible-runner job each, and the run's record.

Rules:
- A phase runs on the plan's hosts of that phase that the operator selected (--limit), minus every host
  that failed or was unreachable in an earlier phase of this run (named in the phase's `excluded`).
- A phase that stopped early (any_errors_fatal, max_fail_percentage), could not run at all, or was
  interrupted stops the apply: the later phases are reported "not_run".
- A phase without a playbook yet is reported "not_implemented" (and never selected explicitly: the CLI
  refuses that as a usage error).
- The first job flushes the fact cache (--flush-cache): every apply gathers facts once, fresh, and the
  later phases reuse them (ansible.cfg: gathering = smart + jsonfile cache).
- The run's folder .orchestrator/runs/<site>/<run_id>/ keeps one private data dir per phase (artifacts)
  and run.json (the summary `--format json` prints).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from orchestrator.runner.cancel import Cancel
from orchestrator.runner.events import PhaseTracker
from orchestrator.runner.job import JobSpec, run_job
from orchestrator.runner.model import PhaseResult, PhaseStatus, Run
from orchestrator.runner.project import Content, facts_dir, new_run_dir, new_run_id, not_implemented_message
from orchestrator.runner.remote import Worker


@dataclass(frozen=True)
class PhaseChoice:
    name: str
    hosts: tuple[str, ...]  # the plan's hosts of the phase
    selected: bool  # by --phases / --from-phase (all by default)
    implemented: bool  # playbooks/<name>.yml exists


@dataclass(frozen=True)
class ApplyRequest:
    site: str  # the spec's site name
    site_arg: str  # SITE as the operator typed it (for the resume command)
    project_root: Path
    inventory_dir: Path
    content: Content
    phases: Sequence[PhaseChoice]
    hosts: frozenset[str] | None  # selected by --limit; None: every host
    limit_arg: str | None
    check: bool
    explicit_phases: bool  # --phases was given (the resume command keeps to those phases)
    extra_vars: Mapping[str, Any] = field(default_factory=dict)  # e.g. --verify-weights
    worker: Worker | None = None  # --worker: every job on this ansible-runner worker


class Observer(Protocol):
    def phase_started(self, phase: str, hosts: Sequence[str]) -> None: ...

    def progress(self, tracker: PhaseTracker, event: Mapping[str, Any]) -> None: ...

    def phase_finished(self, result: PhaseResult) -> None: ...


def _skipped(ph: PhaseChoice, status: PhaseStatus, note: str, excluded: dict[str, str]) -> PhaseResult:
    return PhaseResult(ph.name, status, excluded=excluded, note=note)


def resume_command(req: ApplyRequest, run: Run) -> str | None:
    """The command that finishes what this run left: from the first phase that did not finish, on the
    hosts that did not (every selected host when the run was interrupted or a phase could not run)."""
    first: PhaseResult | None = None
    hosts: set[str] = set()
    whole = False
    for p in run.phases:
        trouble = p.failed_hosts | p.unreachable_hosts | set(p.unfinished)
        stuck = p.status in (PhaseStatus.INTERRUPTED, PhaseStatus.ERROR, PhaseStatus.NOT_RUN)
        if trouble or stuck or p.status is PhaseStatus.STOPPED:
            first = first or p
            hosts |= trouble
            whole = whole or stuck
    if first is None:
        return None
    argv = ["orchestrator", "apply", req.site_arg]
    if req.explicit_phases:
        names = [p.name for p in req.phases if p.selected]
        argv += ["--phases", ",".join(names[names.index(first.name) :])]
    else:
        argv += ["--from-phase", first.name]
    limit = req.limit_arg if whole else ",".join(sorted(hosts))
    if limit:
        argv += ["--limit", limit]
    if req.check:
        argv.append("--check")
    if req.worker is not None:
        argv += ["--worker", f"{req.worker.user}@{req.worker.host}:{req.worker.port}"]
    return " ".join(shlex.quote(a) for a in argv)


def apply(req: ApplyRequest, observer: Observer, cancel: Cancel, run_id: str | None = None) -> Run:
    run_id = run_id or new_run_id()
    run_dir = new_run_dir(req.project_root, req.site, run_id)
    run = Run(run_id, req.site, req.check, artifacts=str(run_dir))
    facts = facts_dir(req.project_root, req.site)
    chosen = [p for p in req.phases if p.selected or not p.implemented]
    excluded: dict[str, str] = {}
    stop = ""

    def add(result: PhaseResult) -> None:
        run.phases.append(result)
        observer.phase_finished(result)

    try:
        for i, ph in enumerate(chosen, 1):
            if not ph.implemented:
                add(_skipped(ph, PhaseStatus.NOT_IMPLEMENTED, not_implemented_message(ph.name), {}))
                continue
            if stop or cancel.requested:
                add(_skipped(ph, PhaseStatus.NOT_RUN, stop or "the apply was interrupted before it", {}))
                continue
            wanted = [h for h in ph.hosts if req.hosts is None or h in req.hosts]
            left_out = {h: excluded[h] for h in wanted if h in excluded}
            targets = tuple(h for h in wanted if h not in excluded)
            if not targets:
                why = "every selected host was left out" if left_out else "no host of this phase is selected"
                add(_skipped(ph, PhaseStatus.SKIPPED, why, left_out))
                continue
            observer.phase_started(ph.name, targets)
            job = JobSpec(
                phase=ph.name,
                content=req.content,
                inventory_dir=req.inventory_dir,
                facts_dir=facts,
                private_dir=run_dir / f"{i:02d}-{ph.name}",
                limit=targets,
                check=req.check,
                extra_vars=req.extra_vars,
                flush_facts=not any(r.artifacts for r in run.phases),
                worker=req.worker,
            )
            result = run_job(job, on_event=observer.progress, cancel=cancel)
            result.excluded = left_out
            add(result)
            for h in sorted(result.failed_hosts):
                excluded.setdefault(h, f"failed in {ph.name}")
            for h in sorted(result.unreachable_hosts):
                excluded.setdefault(h, f"unreachable in {ph.name}")
            if result.status is PhaseStatus.INTERRUPTED:
                run.interrupted = True
                stop = f"the apply was interrupted in phase {ph.name}"
            elif result.status is PhaseStatus.STOPPED:
                stop = f"phase {ph.name} stopped early: {', '.join(result.unfinished)} did not finish it"
            elif result.status is PhaseStatus.ERROR:
                stop = f"phase {ph.name} could not run"
        run.interrupted = run.interrupted or cancel.requested
    finally:
        run.resume = resume_command(req, run)
        (run_dir / "run.json").write_text(json.dumps(run.as_dict(), indent=2) + "\n", encoding="utf-8")
    return run
