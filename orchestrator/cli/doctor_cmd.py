"""`orchestrator doctor --log FILE [--log FILE ...]`: diagnose saved serving logs offline (no hosts).

Each log is matched against the doctor's rule set (orchestrator/doctor/rules.py): the rule whose distinctive
line comes earliest wins, since the last traceback line of a vLLM-Ascend failure often names the wrong
cause. Exit codes: 0 no known cause in any file (the first error code seen is printed), 3 a known cause was
found in at least one file, 66 a FILE does not exist or cannot be read (nothing is diagnosed), 64 usage.

`orchestrator doctor SITE [--host H ...]` runs the live checks on the site's NPU servers instead
(orchestrator/cli/doctor_live.py).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.output import console
from orchestrator.doctor.logscan import read_log, scan_lines
from orchestrator.doctor.report import LogResult, print_results, results_json


class DoctorFormat(StrEnum):
    table = "table"
    json = "json"


_SAVE_HINT = (
    "pass the path of a saved serving log, e.g. `docker logs vllm-r1 > r1.log 2>&1` or "
    "`journalctl -u vllm-r1 > r1.log`"
)


def _stdin_lines() -> list[str]:
    """`--log -`: the log piped in (`docker logs vllm-r1 2>&1 | orchestrator doctor --log -`)."""
    return sys.stdin.buffer.read().decode("utf-8", errors="replace").splitlines()


def doctor_command(
    site: Annotated[
        str | None,
        typer.Argument(help="Site whose NPU servers to check live (read-only); without it, --log."),
    ] = None,
    hosts: Annotated[
        list[str] | None,
        typer.Option("--host", metavar="H", help="Only this NPU server (repeatable; default: all of them)."),
    ] = None,
    logs: Annotated[
        list[Path] | None,
        typer.Option(
            "--log",
            metavar="FILE",
            help="A saved serving log (what a failed replica printed) to diagnose offline; repeatable; "
            "- reads standard input.",
        ),
    ] = None,
    fmt: Annotated[
        DoctorFormat,
        typer.Option("--format", help="table (people) or json (one object on stdout, nothing else)."),
    ] = DoctorFormat.table,
) -> None:
    """Find the known cause of a failed vLLM-Ascend replica, with its fix: live on the site's NPU servers
    (SITE: NPUs on the PCI bus vs npu-smi, version.info files, driver/firmware versions and compatibility,
    chip health, NPU-NIC links and peer pings, NPUs held by another container, serving logs) or from a
    saved log (--log).

    The earliest distinctive CANN/HCCL/torch_npu line decides (not the last traceback line); generic
    wrapper lines (ERR00100, ERR99999, "EZ9999: Inner Error!", "See root cause above") are skipped. The
    rules and their sources: docs/troubleshooting.md.

    Exit codes: 0 no known cause found / all checks ok, 3 a known cause or a failed check, 4 (SITE) a host
    unreachable and nothing else wrong, 2 (SITE) invalid spec, 66 a FILE cannot be read, 64 usage.
    """
    err = console(stderr=True)
    if site is not None and logs:
        err.print(
            "give either SITE (live checks of its hosts) or --log FILE (a saved log), not both. Fix: "
            f"`orchestrator doctor {site}` or `orchestrator doctor --log FILE`.",
            markup=False,
        )
        raise typer.Exit(exits.USAGE)
    if site is not None:
        from orchestrator.cli.doctor_live import run_live  # the runner, the lock, the spec: not for --log

        run_live(site, hosts or [], fmt is DoctorFormat.json)
    if hosts:
        err.print("--host needs a SITE. Fix: `orchestrator doctor SITE --host H`.", markup=False)
        raise typer.Exit(exits.USAGE)
    if not logs:
        err.print(
            "orchestrator doctor needs a SITE or a log to read. Fix: `orchestrator doctor SITE` checks its "
            "hosts live; --log FILE diagnoses a saved serving log, e.g. `orchestrator doctor --log r1.log`.",
            markup=False,
        )
        raise typer.Exit(exits.USAGE)
    texts: list[tuple[Path, list[str]]] = []
    unreadable = 0
    for path in logs:
        try:
            texts.append((path, _stdin_lines() if str(path) == "-" else read_log(path)))
        except OSError as exc:
            unreadable += 1
            err.print(f"cannot read {path}: {exc.strerror or exc}. Fix: {_SAVE_HINT}.", markup=False)
    if unreadable:
        raise typer.Exit(exits.NO_SITE)
    results = [LogResult(str(path), scan_lines(lines)) for path, lines in texts]
    code = exits.DIAGNOSED if any(r.scan.match is not None for r in results) else exits.OK
    if fmt is DoctorFormat.json:
        print(results_json(results, code))
    else:
        print_results(console(), results)
    raise typer.Exit(code)
