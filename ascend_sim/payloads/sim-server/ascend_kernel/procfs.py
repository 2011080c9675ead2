"""The simulated server's /proc: its own sys/ (emulated sysctls over the controller's read-only ones), irq/,
interrupts, modules and meminfo (hugepage lines); every other entry is a symbolic link into the container's
real procfs (REAL_PROC), so /proc/<pid>, /proc/self, /proc/mounts ... behave as before.

/proc/self and /proc/thread-self resolve for the process that looks them up, like the kernel's: "<tgid>" and
"<tgid>/task/<tid>" (the FUSE request carries the caller's thread id).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ascend_kernel import values
from ascend_kernel.state import BOOT_ID, REAL_PROC, State, read_text
from ascend_kernel.sysctl import SYSCTLS, Sysctl
from ascend_kernel.tree import Dir, File, Link, Node, RealDir, real_node, static


class ProcRoot(Dir):
    def __init__(self, real_fd: int, own: dict[str, Node], caller: Callable[[], int]) -> None:
        self.real_fd = real_fd
        self.own = own
        self.caller = caller

    def child(self, name: str) -> Node | None:
        if name in self.own:
            return self.own[name]
        if name == "self":
            return Link(lambda: str(self._tgid(self.caller())))
        if name == "thread-self":
            return Link(lambda: f"{self._tgid(self.caller())}/task/{self.caller()}")
        try:
            os.lstat(name, dir_fd=self.real_fd)
        except OSError:
            return None
        return Link(f"{REAL_PROC}/{name}")

    def names(self) -> list[str]:
        real = [n for n in os.listdir(self.real_fd) if n not in self.own]
        return sorted(self.own) + real

    def _tgid(self, tid: int) -> int:
        m = re.search(r"^Tgid:\s*(\d+)", _read_real(self.real_fd, f"{tid}/status"), re.M)
        return int(m.group(1)) if m else tid


def _read_real(dir_fd: int, rel: str) -> str:
    try:
        fd = os.open(rel, os.O_RDONLY, dir_fd=dir_fd)
    except OSError:
        return ""
    try:
        return os.read(fd, 65536).decode("utf-8", "replace")
    finally:
        os.close(fd)


def sysctl_file(state: State, s: Sysctl, linked: Callable[[str], File]) -> File:
    if s.link:  # the value lives in sysfs (vm.nr_hugepages is hugepages-2048kB/nr_hugepages)
        return File(lambda: linked(s.link).show(), lambda text: linked(s.link).write(text))
    return File(
        lambda: (state.value(s.path) or str(s.default)) + "\n",
        lambda text: state.set_value(s.path, values.sysctl_int(text, s.lo, s.hi)),
    )


def sys_overlay(state: State, linked: Callable[[str], File]) -> Dir:
    """The emulated part of /proc/sys as nested directories (vm/, kernel/, fs/, kernel/random/boot_id)."""
    files: dict[str, File] = {s.key: sysctl_file(state, s, linked) for s in SYSCTLS}
    files["kernel.random.boot_id"] = File(lambda: read_text(BOOT_ID) or "\n")
    return _as_dirs(files, "")


def _as_dirs(files: dict[str, File], prefix: str) -> Dir:
    """The directory `prefix` (dotted) of the dotted keys in `files`."""
    entries: dict[str, Node] = {}
    for key, node in files.items():
        if not key.startswith(prefix):
            continue
        head, dot, _ = key[len(prefix) :].partition(".")
        if not dot:
            entries[head] = node
        elif head not in entries:
            entries[head] = _as_dirs(files, f"{prefix}{head}.")
    return static(entries)


class MixedSys(RealDir):
    """/proc/sys: the controller's read-only sysctls with the emulated ones laid over them, recursively."""

    def child(self, name: str) -> Node | None:
        own = self.overlay.child(name) if self.overlay is not None else None
        real = None
        if own is None or isinstance(own, Dir):
            real = real_node(self.dir_fd, os.path.join(self.rel, name))
        if isinstance(own, Dir) and isinstance(real, RealDir):
            return MixedSys(self.dir_fd, os.path.join(self.rel, name), own, real.mode)
        return own if own is not None else real


def meminfo(real_fd: int, huge_pages: Callable[[], int]) -> File:
    """The controller's /proc/meminfo with the hugepage lines of this server's reservation (2 MiB pages)."""

    def show() -> str:
        n = huge_pages()
        fields = {"HugePages_Total": f"{n:8d}", "HugePages_Free": f"{n:8d}", "HugePages_Rsvd": f"{0:8d}",
                  "HugePages_Surp": f"{0:8d}", "Hugepagesize": f"{2048:8d} kB",
                  "Hugetlb": f"{n * 2048:8d} kB"}  # fmt: skip
        out = []
        for line in _read_real(real_fd, "meminfo").splitlines():
            key = line.split(":", 1)[0]
            out.append(f"{key}:{fields.pop(key):>{len(line) - len(key) - 1}}" if key in fields else line)
        out += [f"{k}: {v}" for k, v in fields.items()]
        return "\n".join(out) + "\n"

    return File(show)
