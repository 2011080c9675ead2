"""One phase's job on a remote ansible-runner worker: `transmit | ssh WORKER ansible-runner worker | process`.

ansible-runner's remote execution (what AWX's automation mesh streams through receptor): the controller
streams the job's private data dir and arguments to `ansible-runner worker` on another machine over SSH,
the worker runs ansible-playbook there and streams the events back, and the `process` stage hands them to
the same event handler as a local job (live output, summary, history, exit codes), then unpacks the
artifacts (rc, status, stdout, job events) into the controller's private data dir.
https://docs.ansible.com/projects/runner/en/latest/remote_jobs/

What travels with each job: the collection (playbooks, roles, modules: the controller's content, so a worker
never runs other content) as project/, the rendered inventory as inventory/, and the job's arguments and
environment, in memory (`suppress_env_files`: the secrets the spec references as env:NAME, which the job's
lookups read on the worker, are never written to the worker's disk by ansible-runner; its private data
dir is deleted after the job, `worker --delete`). The worker needs ansible-core and ansible-runner (the
execution environment's, ee/), an SSH key that reaches the servers at the path the inventory names, and its
fact cache under ~/.cache/ascend-orchestrator/facts/SITE.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ansible_runner

from orchestrator.runner.cancel import Cancel

COLLECTION = Path("collections") / "ansible_collections" / "ascend" / "npu"
WORKER_COMMAND = "ansible-runner worker --delete"


@dataclass(frozen=True)
class Worker:
    """Where a job runs: `ssh [-p PORT] [-i KEY] USER@HOST WORKER_COMMAND`."""

    host: str
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    host_key_checking: bool = True
    known_hosts_file: str | None = None
    command: str = WORKER_COMMAND

    def argv(self) -> list[str]:
        checking = "yes" if self.host_key_checking else "no"
        opts = ["-o", "BatchMode=yes", "-o", f"StrictHostKeyChecking={checking}"]
        if self.known_hosts_file:
            opts += ["-o", f"UserKnownHostsFile={self.known_hosts_file}"]
        if self.key_file:
            opts += ["-i", str(Path(self.key_file).expanduser())]
        return ["ssh", "-p", str(self.port), *opts, f"{self.user}@{self.host}", self.command]

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


def stage(private_dir: Path, collections: Path, inventory_dir: Path) -> None:
    """project/ = the collection, inventory/ = the rendered inventory (its play_vars.yml beside hosts.yml)."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".ruff_cache")
    source = collections / "ansible_collections" / "ascend" / "npu"
    shutil.copytree(source, private_dir / "project" / COLLECTION, ignore=skip)
    shutil.copytree(inventory_dir, private_dir / "inventory", ignore=skip)


ENV_REF = re.compile(r"^\s*[a-z0-9_]+_ref: env:([A-Za-z_][A-Za-z0-9_]*)\s*$", re.M)


def referenced_env(inventory_dir: Path) -> dict[str, str]:
    """The caller's environment variables the rendered inventory references (`*_ref: env:NAME`): a local job
    inherits the caller's environment, a remote one gets these (and only these) with its arguments."""
    names = {m for f in sorted(inventory_dir.rglob("*.yml")) for m in ENV_REF.findall(f.read_text("utf-8"))}
    return {n: os.environ[n] for n in sorted(names) if n in os.environ}


def remote_environment(local: dict[str, str], site: str, secrets: dict[str, str]) -> dict[str, str]:
    """The local job's environment with the worker's paths (the job runs in project/ there)."""
    env = {k: v for k, v in local.items() if k not in ("PATH", "ANSIBLE_ROLES_PATH")}
    env["ANSIBLE_CONFIG"] = "../inventory/ansible.cfg"
    env["ANSIBLE_COLLECTIONS_PATH"] = "collections"  # a playbook inside it finds its roles by short name
    env["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = f"~/.cache/ascend-orchestrator/facts/{site}"
    return {**env, **secrets}


def stream_job(
    worker: Worker,
    private_dir: Path,
    kwargs: dict[str, Any],
    *,
    event_handler: Callable[[dict[str, Any]], bool],
    cancel: Cancel,
) -> tuple[int | None, str]:
    """Transmit the staged private dir and kwargs to the worker, process what it streams back into
    private_dir/artifacts/<ident>; returns (rc, what ssh said on stderr)."""
    pipe = subprocess.PIPE
    ssh = subprocess.Popen(worker.argv(), stdin=pipe, stdout=pipe, stderr=pipe)
    stdin, stdout, stderr = ssh.stdin, ssh.stdout, ssh.stderr
    assert stdin is not None and stdout is not None and stderr is not None
    err: list[bytes] = []

    def transmit() -> None:
        try:
            where = str(private_dir)
            ansible_runner.run(streamer="transmit", _output=stdin, private_data_dir=where, **kwargs)
        except OSError:
            pass  # ssh ended early (a broken pipe): what it printed says why
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def watch() -> None:  # Ctrl-C: end the SSH session; the worker's ansible-playbook ends with it
        while not stop.wait(0.2):
            if cancel.requested and ssh.poll() is None:
                ssh.send_signal(signal.SIGTERM)
                return

    stop = threading.Event()
    threads = [threading.Thread(target=f, daemon=True) for f in (lambda: err.append(stderr.read()), transmit)]
    for t in [*threads, threading.Thread(target=watch, daemon=True)]:
        t.start()
    try:
        processor = ansible_runner.run(
            streamer="process",
            _input=stdout,
            private_data_dir=str(private_dir),
            ident=kwargs["ident"],
            quiet=True,
            event_handler=event_handler,
        )
    finally:
        stop.set()
        ssh.wait()
        for t in threads:
            t.join(timeout=5)
    rc_file = Path(str(getattr(processor, "artifact_dir", private_dir))) / "rc"
    rc = int(rc_file.read_text().strip()) if rc_file.is_file() else None
    said = b"".join(err).decode(errors="replace").strip()
    if ssh.returncode not in (0, None) and not said:
        said = f"ssh {worker} exited with {ssh.returncode}"
    return rc, said
