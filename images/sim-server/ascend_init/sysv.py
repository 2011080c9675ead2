"""Services of a simulated server, the way Debian's sysv-rc runs them (and systemd-sysv-generator does for
packages that ship only an init script, like Debian's docker.io and irqbalance):

- at boot, every /etc/rcN.d/S<NN><name> link of the default runlevel (2) runs `/etc/init.d/<name> start`,
  in the order of the link names; a service is enabled or disabled with update-rc.d, which is what
  ansible.builtin.service does when the service manager is sysvinit;
- at shutdown (reboot: runlevel 6, poweroff: 0), every K<NN><name> link runs `/etc/init.d/<name> stop`.
sshd is not one of them: ascend-sim-init supervises it (its /etc/init.d/ssh only reloads it).
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import time
from collections.abc import Callable

INIT_OWNED = ("ssh",)
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
       "TERM": "dumb"}  # fmt: skip


def links(runlevel: str, kind: str, root: str = "/") -> list[str]:
    """Service names of the S (start) or K (stop) links of a runlevel, in run order."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, f"etc/rc{runlevel}.d/{kind}[0-9][0-9]*"))):
        name = re.sub(r"^[SK]\d\d", "", os.path.basename(path))
        if name not in INIT_OWNED and os.path.exists(os.path.join(root, "etc/init.d", name)):
            found.append(name)
    return found


def wait_reaping(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    """Wait for an init script and, as PID 1, reap every orphan that exits meanwhile. A daemon started with
    `start-stop-daemon --background` is PID 1's child: while PID 1 sits in a blocking wait for the stop
    script, the stopped daemon stays a zombie, and `start-stop-daemon --stop --retry` (Debian's docker
    script) sees it alive until its retries run out ("refused to die", 20 s per boot)."""
    if os.getpid() != 1:
        return proc.wait(timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode
        if pid:
            continue  # an orphan reaped: look again at once
        if time.monotonic() > deadline:
            proc.kill()
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        time.sleep(0.02)


def run(name: str, action: str, log: Callable[[str], None], output: str, timeout_s: float = 90.0) -> int:
    """Run one init script; its output goes to `output` (a file: a daemon it starts may keep the
    descriptor open, which a pipe would wait for)."""
    try:
        with open(output, "ab") as out:
            proc = subprocess.Popen(
                [f"/etc/init.d/{name}", action], env=ENV, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            code = wait_reaping(proc, timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log(f"service {name} {action}: {exc}")
        return 1
    log(f"service {name} {action}: exit {code}")
    return code


def start_all(log: Callable[[str], None], output: str, runlevel: str = "2") -> None:
    for name in links(runlevel, "S"):
        run(name, "start", log, output)


def stop_all(log: Callable[[str], None], output: str, runlevel: str) -> None:
    for name in links(runlevel, "K"):
        run(name, "stop", log, output)
