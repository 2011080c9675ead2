"""Serve the emulated kernel tree over FUSE (python3-fusepy + libfuse2, in the server image).

`python3 -m ascend_kernel.fusefs MOUNTPOINT` opens the real /sys/module and /sys/bus/pci/devices (for
their read-only views) before anything is mounted over them, mounts, and serves until unmounted or
killed. Single-threaded on purpose: a request never waits for another, and the daemon never touches the
paths it serves (it would deadlock). Every file is direct_io, so each read asks the model and each
write(2) is one kernel write, answered with the kernel's errno.

Names and attributes are cached for ENTRY_TTL_S (a file's attributes never change: size 4096 or 0, the
mount's times, a fixed mode); a name that does not exist is never cached, so a node that appears (a module
loaded, a device back) is seen at once, and one that goes (a module unloaded) can still be stat(2)-ed, not
opened or listed, for at most ENTRY_TTL_S. Without the cache every open walked the path with one LOOKUP
request per component: node exporter's scan of 192 CPUs' cpufreq and topology files (about 4,000 files) cost
this daemon 2.3 CPU-s, 0.8 with it (measured in a simulated server, three scans each).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from typing import Any

import fusepy  # type: ignore[import-not-found]  # python3-fusepy in the server image only

from ascend_kernel.kernel import Kernel
from ascend_kernel.state import KernelError
from ascend_kernel.tree import Dir, File, Link

ENTRY_TTL_S = 1.0


class KernelFS(fusepy.Operations):  # type: ignore[misc]
    def __init__(self, kernel: Kernel) -> None:
        self.k = kernel
        self.started = time.time()
        self.snapshots: dict[int, bytes] = {}
        self.next_fh = 1

    def __call__(self, op: str, *args: Any) -> Any:
        self.k.caller_tid = fusepy.fuse_get_context()[2] or os.getpid()
        try:
            return super().__call__(op, *args)
        except KernelError as exc:
            raise fusepy.FuseOSError(exc.errno or errno.EIO) from None
        except OSError as exc:
            raise fusepy.FuseOSError(exc.errno or errno.EIO) from None

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        node = self.k.resolve(path, follow=False)
        base = {"st_uid": 0, "st_gid": 0, "st_atime": self.started, "st_mtime": self.started,
                "st_ctime": self.started}  # fmt: skip
        if isinstance(node, Dir):
            return {**base, "st_mode": stat.S_IFDIR | node.mode, "st_nlink": 2}
        if isinstance(node, Link):
            return {**base, "st_mode": stat.S_IFLNK | 0o777, "st_nlink": 1, "st_size": len(node.target)}
        size = 0 if path.startswith("/proc/") else 4096  # like procfs and sysfs report them
        return {**base, "st_mode": stat.S_IFREG | node.mode, "st_nlink": 1, "st_size": size}

    def readlink(self, path: str) -> str:
        node = self.k.resolve(path, follow=False)
        if not isinstance(node, Link):
            raise KernelError(errno.EINVAL)
        return node.target

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *self.k.listdir(path)]

    def open(self, path: str, flags: int) -> int:
        node = self.k.resolve(path, follow=False)
        if not isinstance(node, File):
            raise KernelError(errno.EISDIR if isinstance(node, Dir) else errno.ENOENT)
        if flags & os.O_ACCMODE != os.O_RDONLY and (node.store is None or not node.mode & 0o222):
            raise KernelError(errno.EACCES)  # like sysfs/procfs: a read-only attribute even for root
        fh = self.next_fh
        self.next_fh += 1
        return fh

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        if offset == 0 or fh not in self.snapshots:  # like seq_file: generated once per open, at offset 0
            self.snapshots[fh] = self.k.read(path).encode()
        return self.snapshots[fh][offset : offset + size]

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        self.k.write(path, data.decode("utf-8", "replace"))
        return len(data)

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        node = self.k.resolve(path, follow=False)
        if not isinstance(node, File) or node.store is None:
            raise KernelError(errno.EACCES)

    def release(self, path: str, fh: int) -> int:
        self.snapshots.pop(fh, None)
        return 0

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        raise KernelError(errno.EACCES)

    def mkdir(self, path: str, mode: int) -> None:
        raise KernelError(errno.EACCES)

    def unlink(self, path: str) -> None:
        raise KernelError(errno.EACCES)

    def rename(self, old: str, new: str) -> None:
        raise KernelError(errno.EACCES)

    def chmod(self, path: str, mode: int) -> None:
        raise KernelError(errno.EPERM)

    def chown(self, path: str, uid: int, gid: int) -> None:
        raise KernelError(errno.EPERM)

    def utimens(self, path: str, times: Any = None) -> None:
        return None

    def statfs(self, path: str) -> dict[str, int]:
        return {"f_bsize": 4096, "f_frsize": 4096, "f_namemax": 255}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m ascend_kernel.fusefs MOUNTPOINT", file=sys.stderr)
        return 2
    sys_module = os.open("/sys/module", os.O_RDONLY | os.O_DIRECTORY)
    pci_devices = os.open("/sys/bus/pci/devices", os.O_RDONLY | os.O_DIRECTORY)
    kernel = Kernel(sys_module_fd=sys_module, pci_devices_fd=pci_devices)
    os.makedirs(argv[0], exist_ok=True)
    fusepy.FUSE(
        KernelFS(kernel), argv[0], foreground=True, nothreads=True, allow_other=True,
        default_permissions=True, direct_io=True, entry_timeout=ENTRY_TTL_S, attr_timeout=ENTRY_TTL_S,
        negative_timeout=0, fsname="ascend-sim-kernel", subtype="ascend-sim",
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
