"""`orchestrator rollback SITE [--replica R]`: every (or one) replica goes back one release on purpose.

It runs the serve phase's rollout (playbooks/serve.yml) with ``vllm_serve_rollback``: the target of each
replica is the ``previous`` release of its release records (the full container parameters, not the spec),
through the same gates and the same batches as an update. Afterwards the records hold no previous release,
so a second rollback says "no previous release for replica X" and exits 3. The next `orchestrator apply`
rolls forward to the spec again (`orchestrator drift` reports the difference until then).
Exit codes as `apply`: 0 rolled back, 3 a gate failed or there was nothing to roll back, 64 usage.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from orchestrator.cli import exits
from orchestrator.cli.apply_cmd import run_and_report
from orchestrator.cli.common import (
    Format,
    FormatOption,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    Yes,
    load,
    render_into,
)
from orchestrator.cli.locking import hold_site_lock
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.site_run import SiteRun, ansible_content
from orchestrator.cli.sites import project_root
from orchestrator.runner.project import new_run_id
from orchestrator.spec.limits import DEFAULT_MAX_BYTES


def rollback_command(
    site: SiteArg,
    replica: Annotated[
        list[str] | None,
        typer.Option(
            "--replica",
            metavar="R",
            help="Only this replica (a PD instance on a PD site; repeatable); default: every replica.",
        ),
    ] = None,
    yes: Yes = False,
    fmt: FormatOption = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Roll replicas back to the release that ran before the last update, through the rollout's gates.

    Exit codes: 0 rolled back, 3 a gate failed or a replica has no previous release, 75 another run holds
    the site's lock, 64 usage.
    """
    err = console(stderr=True)
    root = project_root()
    code = ansible_content(root, err)
    site_run = SiteRun.of(site, root, code, load(site, max_spec_size, max_findings), None)
    assert site_run.result.plan is not None
    plan = site_run.result.plan
    # a PD site's instances roll back as the replicas of the serve phase do (one unit over its servers)
    names = [r.name for r in plan.replicas] + [i.name for i in (plan.pd.instances if plan.pd else ())]
    for r in replica or []:
        if r not in names:
            raise typer.BadParameter(
                f"no replica '{r}'; the replicas are {', '.join(names)}",
                param_hint="--replica",
            )
    chosen = list(dict.fromkeys(replica or []))
    site_run.require_controller({"serve"}, err)
    run_id = new_run_id()
    with hold_site_lock(root, site_run.spec.site, run_id, "rollback", err) as lock:
        _confirm(site_run.spec.site, chosen, yes, err)
        render_into(site_run.result, site_run.inventory_dir)
        req = site_run.request(
            site_run.choices({"serve"}, implemented_only=False),
            check=False,
            explicit=True,
            extra_vars={"vllm_serve_rollback": True, "vllm_serve_rollback_replicas": chosen},
        )
        run_and_report(req, fmt, err, resume=False, kind="rollback", lock=lock, spec_file=site_run.spec_file)


def _confirm(site: str, chosen: list[str], yes: bool, err: Console) -> None:
    if not yes:
        if not sys.stdin.isatty():
            raise typer.BadParameter(
                "rollback restarts replicas and asks first, but stdin is not a terminal. Fix: pass --yes.",
                param_hint="--yes",
            )
        what = ", ".join(chosen) if chosen else "every replica"
        if not typer.confirm(f"Roll {what} of {site} back to the previous release?", err=True):
            err.print("nothing was run", markup=False)
            raise typer.Exit(exits.DECLINED)
