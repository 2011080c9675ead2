"""`orchestrator doctor SITE [--host H ...]`: the live checks on the site's NPU servers (read-only).

The spec is validated (exit 2 when invalid) and rendered, playbooks/doctor.yml gathers every fact in one run
(orchestrator/doctor/live_run.py), and the checks (orchestrator/doctor/live_*.py) turn them into findings
with their fixes. Exit codes: 0 all ok, 3 a finding, 4 a host unreachable (and nothing else wrong), 2 invalid
spec, 64 usage, 66 no such site, 75 another run holds the site's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer

from orchestrator.cli import exits
from orchestrator.cli.common import load, render_into
from orchestrator.cli.locking import hold_site_lock
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console
from orchestrator.cli.site_run import ansible_content
from orchestrator.cli.sites import project_root
from orchestrator.doctor.live_checks import findings
from orchestrator.doctor.live_finding import Finding, Status
from orchestrator.doctor.live_report import LiveReport, print_report
from orchestrator.doctor.live_run import gather
from orchestrator.runner.project import facts_dir, new_run_id
from orchestrator.spec.limits import DEFAULT_MAX_BYTES


def _servers(npu_hosts: Sequence[str], wanted: Sequence[str]) -> list[str]:
    if not wanted:
        return list(npu_hosts)
    unknown = [h for h in wanted if h not in npu_hosts]
    if unknown:
        raise typer.BadParameter(
            f"{', '.join(unknown)} is not an NPU server of this site; "
            f"its NPU servers: {', '.join(npu_hosts)}",
            param_hint="--host",
        )
    return list(dict.fromkeys(wanted))


def run_live(site: str, hosts: Sequence[str], as_json: bool) -> None:
    err = console(stderr=True)
    root = project_root()
    code = ansible_content(root, err)
    result = load(site, DEFAULT_MAX_BYTES, DEFAULT_MAX_FINDINGS)
    if result.spec is None or result.plan is None:
        raise typer.Exit(exits.INVALID_SPEC)
    spec = result.spec
    npu_hosts = [h.name for h in result.plan.hosts if h.chip is not None]
    chosen = _servers(npu_hosts, hosts)
    if not chosen:
        err.print(f"site {spec.site} has no NPU server to check. Fix: add servers to the spec.", markup=False)
        raise typer.Exit(exits.USAGE)
    inventory_dir = Path(result.filename).parent.resolve()
    with hold_site_lock(root, spec.site, new_run_id(), "doctor", err):
        render_into(result, inventory_dir)
        got = gather(code, inventory_dir, facts_dir(root, spec.site), chosen)
    found = findings({h: f for h, f in got.facts.items() if h in chosen})
    found += [
        Finding(h, "facts", Status.fail, f"the doctor playbook failed: {msg}", "read the message; rerun")
        for h, msg in sorted(got.failed.items())
    ]
    report = LiveReport(spec.site, found, dict(got.unreachable))
    if as_json:
        print(report.as_json())
    else:
        print_report(console(), report, chosen)
    raise typer.Exit(report.exit_code)
