"""Who ran what from where: user, controller host, process identity, spec sha256, project version, and the
command line without secrets (what the history records about a run)."""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REDACTED = "<redacted>"
_SECRET_OPTION = re.compile(r"^--?[\w-]*(key|token|password|passwd|secret|credential)[\w-]*$", re.I)
_SECRET_VALUE = re.compile(r"^(sk-|hf_|ghp_|Bearer\s)", re.I)


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def this_host() -> str:
    return socket.gethostname()


def user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no LOGNAME/USER and no passwd entry (a bare container)
        return str(os.getuid())


def process_start(pid: int) -> int | None:
    """When the process started (clock ticks since boot, /proc/<pid>/stat field 22); None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def process_alive(pid: int | None, started: int | None) -> bool:
    """The process `pid` of this host still runs, and is the same process (not a reused pid)."""
    if pid is None or pid <= 0:
        return False
    now = process_start(pid)
    if now is None:
        return False
    return started is None or now == started


def spec_sha256(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def project_version(content_root: Path | None) -> str:
    """The git commit of the checkout the playbooks come from ("+dirty" left out: it is a slow scan), else
    the installed package's version."""
    if content_root is not None and (content_root / ".git").exists():
        try:
            out = subprocess.run(
                ["git", "-C", str(content_root), "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", out.stdout.strip()):
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return version("ascend-orchestrator")
    except PackageNotFoundError:
        return "unknown"


def safe_argv(argv: Sequence[str]) -> list[str]:
    """The command line with the value of every option that names a secret (--api-key X, --token=X) and
    every value that looks like a key replaced by <redacted>. orchestrator takes no secret on its command
    line (the spec references them: env:NAME), so this is a safety net."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _SECRET_OPTION.match(name):
            if eq:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(REDACTED if _SECRET_VALUE.match(arg) else arg)
    return out
