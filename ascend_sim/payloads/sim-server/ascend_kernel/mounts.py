"""Putting the emulated kernel in place, for ascend-sim-boot (systemd units; CAP_SYS_ADMIN, no --privileged).

up(): a recursive bind of the container's own /proc at REAL_PROC (read-only parts stay read-only: Docker's
ReadonlyPaths and MaskedPaths come along), the FUSE daemon at MOUNT, then each emulated directory of
kernel.MOUNTS bound over the real one. down(): the reverse, lazily (a dead daemon leaves ENOTCONN mounts).
mount(2)/umount2(2) are called directly: util-linux would read /proc/self/mountinfo, which is not there while
the daemon is down.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import subprocess
import sys
import time
from collections.abc import Callable

from ascend_kernel.kernel import MOUNTS
from ascend_kernel.state import MOUNT, REAL_PROC

MS_BIND = 0x1000
MS_REC = 0x4000
MNT_DETACH = 2
FUSE_SUPER_MAGIC = 0x65735546
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _mount(source: str, target: str, flags: int) -> None:
    if _libc.mount(source.encode(), target.encode(), None, flags, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount --bind {source} {target}: {os.strerror(err)}")


def umount_detach(target: str) -> None:
    if _libc.umount2(target.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount -l {target}: {os.strerror(err)}")


def mount_tmpfs(target: str, options: str) -> None:
    """A fresh tmpfs (the next boot's /run)."""
    if _libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, options.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount -t tmpfs tmpfs {target}: {os.strerror(err)}")


def fs_type(path: str) -> int | None:
    """statfs(2) f_type of the filesystem at path; FUSE_SUPER_MAGIC for a dead FUSE mount (ENOTCONN),
    None when the path cannot be looked up."""
    buf = ctypes.create_string_buffer(512)  # struct statfs; f_type (a long) comes first
    if _libc.statfs(path.encode(), buf) != 0:
        return FUSE_SUPER_MAGIC if ctypes.get_errno() == errno.ENOTCONN else None
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF


def _umount_ours(target: str, ours: Callable[[str], bool]) -> int:
    """Unmount target while what is mounted there is ours: never the container's own /proc or /sys."""
    n = 0
    while n < 16 and ours(target) and _libc.umount2(target.encode(), MNT_DETACH) == 0:
        n += 1
    return n


def down() -> None:
    for target in (*reversed(MOUNTS), MOUNT):
        _umount_ours(target, lambda t: fs_type(t) == FUSE_SUPER_MAGIC)
    _umount_ours(REAL_PROC, os.path.ismount)


def fuse_ready(timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.stat(MOUNT).st_dev != os.stat(os.path.dirname(MOUNT)).st_dev:
                return os.path.isdir(os.path.join(MOUNT, "proc"))
        except OSError:
            pass
        time.sleep(0.05)
    return False


def start_daemon(log_path: str) -> subprocess.Popen[bytes]:
    os.makedirs(MOUNT, exist_ok=True)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "1",
           "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "ascend_kernel.fusefs", MOUNT],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip


def up(log: Callable[[str], None], log_path: str) -> subprocess.Popen[bytes] | None:
    """Mount everything; returns the daemon, or None (logged) when FUSE cannot be mounted here."""
    down()
    os.makedirs(REAL_PROC, exist_ok=True)
    _mount("/proc", REAL_PROC, MS_BIND | MS_REC)
    daemon = start_daemon(log_path)
    if not fuse_ready():
        log(f"kernel: the FUSE filesystem did not come up (see {log_path}); the server runs without its "
            "emulated kernel interfaces")  # fmt: skip
        daemon.kill()
        daemon.wait()
        down()
        return None
    for target in MOUNTS:
        if not os.path.exists(target):
            log(f"kernel: {target} does not exist on this kernel: not emulated")
            continue
        _mount(MOUNT + target, target, MS_BIND)
    log(f"kernel: emulated {', '.join(MOUNTS)} (FUSE daemon pid {daemon.pid})")
    return daemon
