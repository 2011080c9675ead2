"""Helpers of the simulated-cluster integration tests: run the CLI and Ansible in a scratch root (its
.orchestrator/ and inventories/ live in a temp dir, not the checkout), look inside servers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ascend_sim.engine import SimError, ensure_engine

BIN = Path(sys.executable).parent
ENV = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "ANSIBLE_NOCOLOR": "1"}
REPO = Path(__file__).resolve().parents[3]
# plain ansible-playbook with the checkout's roles and collection (what the README's second way does)
ANSIBLE_ENV = {
    **ENV,
    "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
    "ANSIBLE_COLLECTIONS_PATH": str(REPO / "collections"),
    "ANSIBLE_FORCE_COLOR": "0",
}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def site_config(root: Path, inventory: Path | str) -> dict[str, str]:
    """ANSIBLE_CONFIG: the ansible.cfg rendered beside the inventory (pipelining, SSH multiplexing, the
    fact cache), as the README's plain ansible-playbook and orchestrator's runner use it."""
    cfg = (root / inventory).parent / "ansible.cfg"
    if not cfg.is_file():
        return {}
    # the tests read the default callback's one-line JSON results; the rendered file asks for YAML, which
    # wraps long messages (presentation only: every setting that changes how Ansible runs stays)
    return {"ANSIBLE_CONFIG": str(cfg), "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}


def ansible_playbook(
    root: Path,
    inventory: Path | str,
    playbook: str,
    *args: str,
    timeout: float = 1200,
    env_extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`ANSIBLE_CONFIG=<inventory dir>/ansible.cfg ansible-playbook -i INVENTORY playbooks/PLAYBOOK ARGS`
    from the scratch root (env_extra: more environment, e.g. another fact cache)."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / playbook), *args]
    env = {**ANSIBLE_ENV, **site_config(root, inventory), **(env_extra or {})}
    return subprocess.run(
        argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def recap(stdout: str) -> dict[str, dict[str, int]]:
    """PLAY RECAP per host: {host: {ok, changed, unreachable, failed}}."""
    keys = ("ok", "changed", "unreachable", "failed")
    return {m[0]: dict(zip(keys, map(int, m[1:]), strict=True)) for m in RECAP.findall(stdout)}


@dataclass
class Sim:
    root: Path
    name: str
    up_output: str
    # a golden's copy (goldens.py): the apply that converged it from bare servers, earlier in this run
    converge: subprocess.CompletedProcess[str] | None = None

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([str(BIN / "orchestrator"), *args], self.root, check=check)

    def sim(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.cli("sim", *args, "--name", self.name, check=check)

    def ansible(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        inventory = f"inventories/{self.name}/hosts.yml"
        argv = [str(BIN / "ansible"), "-i", inventory, *args]
        env = {**ANSIBLE_ENV, **site_config(self.root, inventory)}
        return run(argv, self.root, check=check, timeout=300, env=env)

    @property
    def state_dir(self) -> Path:
        return self.root / ".orchestrator" / "sim" / self.name

    def container(self, server: str) -> str:
        return f"ascend-sim-{self.name}-{server}"

    def exec(self, server: str, script: str) -> str:
        docker = engine()
        res = docker.containers.get(self.container(server)).exec_run(["sh", "-c", script])
        return str(res.output.decode())


def run(
    argv: list[str], cwd: Path, *, check: bool = True, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        argv, cwd=cwd, env=env or ENV, capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"{' '.join(argv)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def engine() -> Any:
    try:
        return ensure_engine()
    except SimError as exc:
        pytest.fail(f"the simulated cluster needs a Docker engine: {exc}")


def module_cluster(factory: pytest.TempPathFactory, prefix: str, *args: str) -> Iterator[Sim]:
    """A cluster in a scratch root for one test module; `sim down` at the end, whatever happened."""
    sim = bring_up(factory.mktemp(prefix), f"{prefix}{os.getpid() % 100000}", *args)
    try:
        yield sim
    finally:
        sim.sim("down", check=False)


def bring_up(root: Path, name: str, *args: str) -> Sim:
    engine()
    sim = Sim(root, name, "")
    sim.up_output = sim.sim("up", *args).stdout
    return sim
