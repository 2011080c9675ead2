"""One phase = one ansible-runner job: playbooks/<phase>.yml against the rendered inventory, in a private
data dir of its own.

- The private data dir is new for every job (ansible-runner writes its inputs into env/ and reuses them
  the next time a dir is used); the run's folder holds one per phase, artifacts kept.
- Inventory = the rendered hosts.yml; ANSIBLE_CONFIG = the rendered ansible.cfg. No extra vars, ever:
  they outrank every inventory variable, so per-host settings belong in the inventory.
- ansible-runner writes the job's environment into artifacts/<ident>/command; the environment can hold
  the secrets the spec references (env:NAME), so the file is rewritten without it before the playbook
  starts, and checked again at the end.
- Cancellation: cancel_callback (GracefulStop) is polled while the job runs: SIGINT to ansible-playbook
  first (Ansible stops like on Ctrl-C), and only after a grace period ansible-runner kills its process group.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from orchestrator.runner.cancel import GRACE_S, Cancel, GracefulStop
from orchestrator.runner.events import PhaseTracker
from orchestrator.runner.model import PhaseResult
from orchestrator.runner.project import Content
from orchestrator.runner.remote import (
    COLLECTION,
    Worker,
    referenced_env,
    remote_environment,
    stage,
    stream_job,
)

POLL_S = 0.2
"""How often ansible-runner checks the cancel flag (its pexpect timeout)."""


@dataclass(frozen=True)
class JobSpec:
    phase: str
    content: Content
    inventory_dir: Path  # rendered: hosts.yml, ansible.cfg, play_vars.yml, group_vars/, host_vars/
    facts_dir: Path
    private_dir: Path  # must not exist yet
    limit: tuple[str, ...]  # the hosts of this job
    check: bool = False
    flush_facts: bool = False  # the run's first job: gather facts fresh (the later jobs reuse them)
    extra_vars: Mapping[str, Any] = field(default_factory=dict)  # -e (JSON), e.g. --verify-weights
    worker: Worker | None = None  # run on this ansible-runner worker (remote.py); None: here


def cmdline(spec: JobSpec) -> str | None:
    args = (["--check", "--diff"] if spec.check else []) + (["--flush-cache"] if spec.flush_facts else [])
    if spec.extra_vars:
        args += ["-e", shlex.quote(json.dumps(dict(spec.extra_vars), sort_keys=True))]
    return " ".join(args) or None


def environment(spec: JobSpec) -> dict[str, str]:
    """What the job gets on top of the caller's environment (every value recorded in the artifacts)."""
    return {
        "ANSIBLE_CONFIG": str(spec.inventory_dir / "ansible.cfg"),
        # the rendered ansible.cfg holds these relative to the checkout; absolute wins for any project root
        "ANSIBLE_ROLES_PATH": str(spec.content.roles),
        "ANSIBLE_COLLECTIONS_PATH": str(spec.content.collections),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(spec.facts_dir),
        # ansible-runner turns host key checking off unless the environment says otherwise; the inventory's
        # ansible_ssh_host_key_checking (from the spec) decides
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_NOCOLOR": "1",
        # ansible-playbook of the Python that runs orchestrator, whatever PATH says
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }


def scrub_command_file(artifact_dir: Path, keep: Mapping[str, str]) -> None:
    """Rewrite artifacts/<ident>/command with only the variables orchestrator set (never the caller's
    environment, which may hold secrets)."""
    path = artifact_dir / "command"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    data["env"] = dict(keep)
    data["env_note"] = "the caller's environment is not recorded (it may hold secrets)"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    tmp.chmod(0o600)
    os.replace(tmp, path)


def run_job(
    spec: JobSpec,
    *,
    on_event: Callable[[PhaseTracker, Mapping[str, Any]], None],
    cancel: Cancel,
    grace_s: float = GRACE_S,
) -> PhaseResult:
    """Run the phase's playbook; on_event(tracker, event) after every event (progress)."""
    spec.private_dir.mkdir(mode=0o700)  # FileExistsError: a private data dir is never reused
    tracker = PhaseTracker(spec.phase)
    env = environment(spec)
    artifact_dir = spec.private_dir / "artifacts" / spec.phase

    def handle(event: dict[str, Any]) -> bool:
        keep = tracker.handle(event)
        on_event(tracker, event)
        return keep

    def status(data: dict[str, Any], runner_config: Any = None) -> None:
        if data.get("status") == "running":  # after runner wrote the command file, before the playbook
            scrub_command_file(artifact_dir, env)

    started = time.monotonic()
    if spec.worker is not None:
        return _run_remote(spec, spec.worker, tracker, handle, cancel, env, started)
    runner = ansible_runner.run(
        private_data_dir=str(spec.private_dir),
        ident=spec.phase,
        playbook=str(spec.content.playbook(spec.phase)),
        inventory=str(spec.inventory_dir / "hosts.yml"),
        limit=",".join(spec.limit),
        cmdline=cmdline(spec),
        envvars=env,
        quiet=True,
        suppress_env_files=True,
        fact_cache_type="orchestrator",  # not 'jsonfile': ansible-runner would point the cache into the job
        settings={"pexpect_timeout": POLL_S, "suppress_ansible_output": True},
        event_handler=handle,
        status_handler=status,
        cancel_callback=GracefulStop(cancel, grace_s),
    )
    scrub_command_file(artifact_dir, env)
    # a playbook that stopped on our SIGINT exits by itself: runner.canceled stays False
    canceled = cancel.requested or bool(getattr(runner, "canceled", False)) or runner.status == "canceled"
    result = tracker.result(canceled=canceled, rc=runner.rc, seconds=time.monotonic() - started)
    result.artifacts = str(spec.private_dir)
    return result


def _run_remote(
    spec: JobSpec,
    worker: Worker,
    tracker: PhaseTracker,
    handle: Callable[[dict[str, Any]], bool],
    cancel: Cancel,
    env: dict[str, str],
    started: float,
) -> PhaseResult:
    """The same job through `transmit | ssh worker ansible-runner worker | process` (remote.py): the same
    events reach the same tracker; the artifacts land in the same private data dir."""
    stage(spec.private_dir, spec.content.collections, spec.inventory_dir)
    site = spec.inventory_dir.name
    kwargs: dict[str, Any] = {
        "ident": spec.phase,
        # absolute under the private dir: ansible-runner makes them relative for the worker
        "playbook": str(spec.private_dir / "project" / COLLECTION / "playbooks" / f"{spec.phase}.yml"),
        "inventory": str(spec.private_dir / "inventory" / "hosts.yml"),
        "limit": ",".join(spec.limit),
        "cmdline": cmdline(spec),
        "envvars": remote_environment(env, site, referenced_env(spec.inventory_dir)),
        "suppress_env_files": True,
        "fact_cache_type": "orchestrator",
        "settings": {"suppress_ansible_output": True},
    }
    rc, said = stream_job(worker, spec.private_dir, kwargs, event_handler=handle, cancel=cancel)
    scrub_command_file(spec.private_dir / "artifacts" / spec.phase, remote_environment(env, site, {}))
    if said and tracker.stats is None:  # the job never ran: ssh's own words say why
        tracker.note_output(f"worker {worker}: {said}")
    result = tracker.result(canceled=cancel.requested, rc=rc, seconds=time.monotonic() - started)
    result.artifacts = str(spec.private_dir)
    return result
