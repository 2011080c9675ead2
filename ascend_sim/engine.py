"""Docker engine bootstrap for the simulated cluster.

`ensure_engine()` installs Debian's docker.io and debootstrap when they are absent (apt-get), starts `dockerd`
in the background when nothing answers on the socket (log: /var/log/ascend-sim-dockerd.log) and waits until
the engine answers. `.ci/run` and the demo call it as `python -m ascend_sim.engine ensure`.

The engine is started with --bridge=none (no docker0, no iptables): simulated servers share the host's network
namespace, and each server's inner `dockerd --bridge=none` deletes a `docker0` link when it starts (moby's
removeDefaultBridgeInterface), which would cut the network of containers on the host engine's default bridge.
Everything the simulator runs uses --network host (servers) or none (image builds) and stays on 127.0.0.0/8.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException

SOCKET = Path("/var/run/docker.sock")
DOCKERD_LOG = Path("/var/log/ascend-sim-dockerd.log")
DOCKERD_ARGS = ("--bridge=none", "--iptables=false", "--ip-masq=false")
APT_PACKAGES = ("docker.io", "debootstrap", "rsync")
START_TIMEOUT_S = 60.0


class SimError(Exception):
    """A simulator operation failed; the message is a sentence that says why and what to do."""


class EngineError(SimError):
    """The Docker engine cannot be made available."""


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _missing_tools() -> list[str]:
    # rsync: the weights phase copies from the controller with ansible.posix.synchronize
    need = {"dockerd": "docker.io", "debootstrap": "debootstrap", "rsync": "rsync"}
    return sorted({pkg for tool, pkg in need.items() if shutil.which(tool) is None})


def install_packages(packages: list[str]) -> None:
    """apt-get install the given Debian packages (update first)."""
    if os.geteuid() != 0:
        raise EngineError(
            f"Docker engine not available: {', '.join(packages)} missing and installing needs root. "
            f"Fix: run as root, or `sudo apt-get install {' '.join(packages)}`."
        )
    if shutil.which("apt-get") is None:
        raise EngineError(
            f"Docker engine not available: {', '.join(packages)} missing and this is not a Debian-like "
            "host (no apt-get). Fix: install Docker and debootstrap with your package manager."
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    _say(f"sim engine: installing {' '.join(packages)} with apt-get")
    for cmd in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
    ):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise EngineError(
                f"Docker engine not available: `{' '.join(cmd)}` failed (exit {proc.returncode}):\n{tail}\n"
                "Fix: check the apt sources (/etc/apt/sources.list*) and network, then run again."
            )


def client(timeout: int = 120) -> Any:
    """A docker SDK client for the local engine, or EngineError with the fix."""
    try:
        cli = docker.DockerClient(base_url=f"unix://{SOCKET}", version="auto", timeout=timeout)
        cli.ping()
    except (DockerException, OSError) as exc:
        raise EngineError(
            f"Docker engine not reachable at {SOCKET}: {exc}. "
            "Fix: run `python -m ascend_sim.engine ensure` (installs and starts dockerd)."
        ) from None
    return cli


def _responding() -> bool:
    try:
        client(timeout=5)
    except EngineError:
        return False
    return True


def _dockerd_running() -> bool:
    pid_file = Path("/var/run/docker.pid")
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def start_dockerd() -> None:
    """Start dockerd detached from this process (own session), logging to DOCKERD_LOG."""
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineError("Docker engine not available: no dockerd binary. Fix: apt-get install docker.io.")
    if os.geteuid() != 0:
        raise EngineError(
            "Docker engine not running and starting dockerd needs root. Fix: run as root or start Docker."
        )
    DOCKERD_LOG.parent.mkdir(parents=True, exist_ok=True)
    _say(f"sim engine: starting dockerd (log: {DOCKERD_LOG})")
    with DOCKERD_LOG.open("ab") as log:
        subprocess.Popen(
            [dockerd, *DOCKERD_ARGS],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


def _log_tail(lines: int = 8) -> str:
    try:
        return "\n".join(DOCKERD_LOG.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def ensure_engine(*, install: bool = True, timeout_s: float = START_TIMEOUT_S) -> Any:
    """Make the engine reachable (install, start, wait) and return a docker SDK client."""
    missing = _missing_tools()
    if missing and install:
        install_packages(missing)
    if _responding():
        if Path("/sys/class/net/docker0").exists():
            _say(
                "sim engine: note: this Docker engine has a default bridge (docker0); every simulated "
                "server's inner dockerd deletes it when it starts, so containers on that bridge lose their "
                "network. "
                "Fix: run containers with --network host, or restart dockerd with --bridge=none."
            )
        return client()
    if not _dockerd_running():
        start_dockerd()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _responding():
            return client()
        time.sleep(0.5)
    raise EngineError(
        f"Docker engine not reachable: dockerd did not answer on {SOCKET} within {timeout_s:.0f} s. "
        f"Last lines of {DOCKERD_LOG}:\n{_log_tail()}\n"
        "Fix: read the log, stop any stale dockerd and run again."
    )


def main(argv: list[str]) -> int:
    usage = "usage: python -m ascend_sim.engine ensure|status"
    if len(argv) != 1 or argv[0] not in ("ensure", "status"):
        _say(usage)
        return 64
    try:
        cli = client(timeout=5) if argv[0] == "status" else ensure_engine()
    except EngineError as exc:
        _say(str(exc))
        return 1
    info = cli.version()
    print(f"docker engine {info.get('Version', '?')} (API {info.get('ApiVersion', '?')}) ready at {SOCKET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
