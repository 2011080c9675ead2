# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""What the serving gates ask Docker about a replica's container on its host (the docker CLI, read-only):
its state, its id, its last log lines."""

from __future__ import annotations

import subprocess


def container_state(name: str | None) -> str:
    """ "running", or what the container is instead: a replica runs with restart policy unless-stopped, so
    a crash during the gates shows as a restart, which fails them like an exit."""
    if not name:
        return "running"
    proc = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Status}} {{.RestartCount}} {{.State.ExitCode}}", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return "missing"
    status, restarts, code = [*proc.stdout.split(), "", "0", "0"][:3]
    if restarts.isdigit() and int(restarts) > 0:
        return f"{status} after {restarts} restart(s) (it exited with {code})"
    return status


def container_id(name: str | None) -> str:
    """The container's id (a recreated container is another wait), "" when there is none."""
    if not name:
        return ""
    proc = subprocess.run(
        ["docker", "inspect", "-f", "{{.Id}}", name], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def log_tail(name: str | None, lines: int) -> list[str]:
    if not name:
        return []
    proc = subprocess.run(
        ["docker", "logs", "--tail", str(lines), name], capture_output=True, text=True, check=False
    )
    return (proc.stdout + proc.stderr).splitlines()[-lines:]
