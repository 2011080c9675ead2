"""`orchestrator heal SITE`: bring back what is down, as the spec says it runs, and change nothing else.

The supervisor of replicas that Docker's restart policy cannot restart alone. A single-server replica comes
back by itself (its containers run with restart policy unless-stopped: after a crash, a daemon restart or a
reboot); a replica over several servers is one engine group (a head and its headless DP ranks, or a Ray
cluster) and restarts as a unit: members first, head last, through the rollout's gates and back into the
gateway. Heal runs the serve and gateway phases with ``vllm_serve_heal`` (roles/vllm_serve): the replicas
with a member container missing or not running, or whose head does not answer /health 200 within
``vllm_serve_heal_grace_s``, restart on their current release one head server at a time (serial 1: never
two replicas at once); a running container of another release is a change, left for `orchestrator apply`;
the gateway phase adds back every head its router does not list (a rebooted gateway host starts empty).
``--purge-compile-cache`` (``vllm_serve_cache_purge``) first removes the compile caches of the servers in
the run and restarts every replica with a member there, cold (no cache is copied from a peer that run).

`orchestrator drift SITE --heal` runs it after a check that found drift or a failure in those phases, so
the scheduled drift run (`orchestrator drift schedule --heal`) is the supervisor.
Exit codes as `apply`: 0 nothing to heal or healed, 3 a replica failed its gates, 75 locked, 64 usage.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from orchestrator.cli.apply_cmd import run_and_report
from orchestrator.cli.common import (
    Format,
    FormatOption,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    load,
    render_into,
)
from orchestrator.cli.locking import hold_site_lock
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.site_run import Limit, SiteRun, ansible_content
from orchestrator.cli.sites import project_root
from orchestrator.runner.project import new_run_id
from orchestrator.spec.limits import DEFAULT_MAX_BYTES

HEAL_PHASES = frozenset({"serve", "gateway"})
# serial 1 over the head servers: one replica restarts at a time, whatever rollout.batch_size says
HEAL_VARS: dict[str, Any] = {"vllm_serve_heal": True, "play_serve_serial": 1}


def heal(site_run: SiteRun, fmt: Format, err: Console, *, purge: bool = False) -> None:
    """Run the heal (exits with its code: typer.Exit); purge: the compile caches of the servers in the run
    are removed first and their replicas restart cold."""
    site_run.require_controller(HEAL_PHASES, err)
    run_id = new_run_id()
    with hold_site_lock(site_run.root, site_run.spec.site, run_id, "heal", err) as lock:
        render_into(site_run.result, site_run.inventory_dir)
        req = site_run.request(
            site_run.choices(set(HEAL_PHASES), implemented_only=True),
            check=False,
            explicit=True,
            extra_vars={**HEAL_VARS, "vllm_serve_cache_purge": True} if purge else HEAL_VARS,
        )
        run_and_report(req, fmt, err, resume=False, kind="heal", lock=lock, spec_file=site_run.spec_file)


def heal_command(
    site: SiteArg,
    limit: Limit = None,
    purge_compile_cache: Annotated[
        bool,
        typer.Option(
            "--purge-compile-cache",
            help="First remove the compile caches (vLLM's and Triton's) of the servers in the run (--limit) "
            "and restart their replicas cold, through the gates: what `orchestrator doctor` says to do when "
            "a log names a cache fault (the Triton g++ internal compiler error).",
        ),
    ] = False,
    fmt: FormatOption = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Restart the replicas that are down or do not answer /health (as units, on their current release,
    one at a time, through the gates) and add missing heads back to the gateway; change nothing else.

    Exit codes: 0 nothing to heal or healed, 3 a replica failed its gates, 75 another run holds the site's
    lock, 64 usage.
    """
    err = console(stderr=True)
    root = project_root()
    code = ansible_content(root, err)
    site_run = SiteRun.of(site, root, code, load(site, max_spec_size, max_findings), limit)
    heal(site_run, fmt, err, purge=purge_compile_cache)
