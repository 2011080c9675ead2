"""`--worker [USER@]HOST[:PORT]`: run the phases' jobs on an ansible-runner worker (orchestrator/runner/
remote.py), reached over SSH with the spec's ssh settings (key, host key checking, known_hosts)."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from orchestrator.runner.remote import Worker
from orchestrator.spec.site import SiteSpec

WorkerOption = Annotated[
    str | None,
    typer.Option(
        "--worker",
        metavar="[USER@]HOST[:PORT]",
        help="Run each phase's job on this machine's ansible-runner worker (`ansible-runner worker` over "
        "SSH: transmit | worker | process), e.g. a controller in the servers' region; the spec's ssh "
        "settings reach it. Default: here.",
    ),
]

_WORKER = re.compile(
    r"^(?:(?P<user>[A-Za-z_][A-Za-z0-9_.-]*)@)?(?P<host>[A-Za-z0-9_.-]+)(?::(?P<port>\d{1,5}))?$"
)


def parse_worker(text: str | None, spec: SiteSpec) -> Worker | None:
    if text is None:
        return None
    m = _WORKER.match(text)
    if m is None or not 0 < int(m["port"] or 22) < 65536:
        raise typer.BadParameter(
            f"{text!r} is not [USER@]HOST[:PORT]. Fix: e.g. --worker root@10.1.0.5 or "
            "--worker runner-eu:2222",
            param_hint="--worker",
        )
    return Worker(
        host=m["host"],
        user=m["user"] or spec.ssh.user,
        port=int(m["port"] or 22),
        key_file=spec.ssh.key_file,
        host_key_checking=spec.ssh.host_key_checking,
        known_hosts_file=spec.ssh.known_hosts_file,
    )
