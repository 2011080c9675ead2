"""The whole emulated tree and the operations on it, by absolute path of the simulated server:
resolve / read / write / listdir / glob. The FUSE adapter, the boot sequence and the unit tests all go
through this class, so a value is validated the same way whoever writes it.

Mount points (MOUNTS): ascend-sim-boot binds each of these emulated entries over the real one.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from collections.abc import Callable, Iterator

from ascend_kernel import hw as hwmod
from ascend_kernel import irqs, modules, procfs, sysfs
from ascend_kernel.state import REAL_PROC, KernelError, State, enoent, p
from ascend_kernel.tree import Dir, File, Link, Node, RealDir, RealFile, StaticDir, ro, static

SYS_TREES = (
    "/sys/kernel/mm/transparent_hugepage",
    "/sys/kernel/mm/hugepages",
    "/sys/devices/system/cpu",
    "/sys/kernel/debug",
    "/sys/module",
    "/sys/bus/pci/devices",
)
# The trees the FUSE filesystem serves (its /proc links every other entry to the real procfs).
TREES = ("/proc", *SYS_TREES)
# What is bound over the real ones: /proc itself stays the kernel's procfs (systemd and its tools check
# that /proc is a procfs, statfs(2) PROC_SUPER_MAGIC: systemd-tmpfiles refuses to run on a FUSE /proc), so
# only the emulated entries of /proc are bound, files included, the way LXCFS binds its /proc files.
MOUNTS = ("/proc/sys", "/proc/irq", "/proc/interrupts", "/proc/modules", "/proc/meminfo", *SYS_TREES)


class Kernel:
    def __init__(
        self,
        hardware: hwmod.Hardware | None = None,
        sys_module_fd: int | None = None,
        pci_devices_fd: int | None = None,
    ) -> None:
        self.state = State()
        source: Callable[[], hwmod.Hardware] = (lambda: hardware) if hardware else hwmod.Live()
        self._hw = source
        self.caller_tid = os.getpid()
        self.sysfs = sysfs.Sysfs(self.state, source)
        self.irqs = irqs.Interrupts(self.state, source)
        self.modules = modules.Modules(self.state)
        self.proc_fd = os.open(p(REAL_PROC), os.O_RDONLY | os.O_DIRECTORY)
        self.sys_module_fd = sys_module_fd
        self.pci_devices_fd = pci_devices_fd
        self.root = self._build()

    @property
    def hw(self) -> hwmod.Hardware:
        return self._hw()

    def close(self) -> None:
        os.close(self.proc_fd)

    # --------------------------------------------------------------------------------------- tree

    def _build(self) -> Dir:
        thp, huge = self.sysfs.thp(), self.sysfs.hugepages()
        overlay = procfs.sys_overlay(self.state, self._linked)
        sys_real = os.open("sys", os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.proc_fd)
        proc_own: dict[str, Node] = {
            "sys": procfs.MixedSys(sys_real, ".", overlay),
            "irq": self.irqs.proc_irq(),
            "interrupts": File(self.irqs.text),
            "modules": File(lambda: modules.proc_modules(self.modules)),
            "meminfo": procfs.meminfo(self.proc_fd, lambda: self.sysfs.nr_hugepages(2048)),
        }
        proc = procfs.ProcRoot(self.proc_fd, proc_own, lambda: self.caller_tid)
        sys_tree = static({
            "kernel": static({"mm": static({"transparent_hugepage": thp, "hugepages": huge}),
                              "debug": self.sysfs.debugfs()}),
            "devices": static({"system": static({"cpu": self.sysfs.cpu_dir()})}),
            "module": self._sys_module(),
            "bus": static({"pci": static({"devices": self._pci_devices()})}),
        })  # fmt: skip
        return static({"proc": proc, "sys": sys_tree})

    def _pci_devices(self) -> Dir:
        """The NPUs' PCI functions laid over the controller's real devices (read-only links into /sys)."""
        own = self.irqs.pci_devices()
        return own if self.pci_devices_fd is None else RealDir(self.pci_devices_fd, ".", own)

    def _linked(self, path: str) -> File:
        node = self.resolve(path)
        if not isinstance(node, File):
            raise enoent(path)
        return node

    def _param_file(self, module: str, prm: modules.Param) -> File:
        def show() -> str:
            return self.modules.params(module).get(prm.name, prm.default) + "\n"

        def store(text: str) -> None:
            self.modules.set_param(module, prm.name, text)

        return File(show, store if prm.perm & 0o222 else None, prm.perm)

    def _sys_module(self) -> Dir:
        def module_dir(name: str) -> Dir:
            mod = modules.MODULES[name]
            params: dict[str, Node] = {}
            for prm in mod.params:
                if not prm.perm:
                    continue
                params[prm.name] = self._param_file(name, prm)
            return static({
                "initstate": ro("live"),
                "refcnt": ro(lambda: f"{len(self.modules.holders(name))}\n"),
                "coresize": ro(str(mod.size)),
                "taint": ro(""),
                "holders": StaticDir(lambda: {h: Link(f"../../{h}") for h in self.modules.holders(name)}),
                "parameters": static(params),
            })  # fmt: skip

        own = StaticDir(lambda: {m: module_dir(m) for m in self.modules.loaded()})
        if self.sys_module_fd is None:
            return own
        return RealDir(self.sys_module_fd, ".", own)

    # --------------------------------------------------------------------------------- operations

    def resolve(self, path: str, follow: bool = True) -> Node:
        """The node at an absolute path; symbolic links inside the tree are followed (not the last one unless
        follow), links out of it (into the real procfs) end the walk."""
        node: Node = self.root
        parts = [x for x in path.split("/") if x]
        seen = 0
        i = 0
        while i < len(parts):
            if not isinstance(node, Dir):
                raise KernelError(errno.ENOTDIR, f"{path}: Not a directory")
            child = node.child(parts[i])
            if child is None:
                raise enoent(path)
            if isinstance(child, Link) and (follow or i < len(parts) - 1):
                seen += 1
                if seen > 40:
                    raise KernelError(errno.ELOOP, f"{path}: Too many levels of symbolic links")
                target = child.target
                base = "/" if target.startswith("/") else "/" + "/".join(parts[:i])
                resolved = os.path.normpath(os.path.join(base, target))
                if not self._inside(resolved):
                    raise KernelError(errno.EXDEV, f"{path}: leaves the emulated tree ({resolved})")
                parts = [x for x in resolved.split("/") if x] + parts[i + 1 :]
                node, i = self.root, 0
                continue
            node = child
            i += 1
        return node

    def _inside(self, path: str) -> bool:
        return any(path == m or path.startswith(m + "/") for m in TREES)

    def read(self, path: str) -> str:
        node = self.resolve(path)
        if isinstance(node, Dir):
            raise KernelError(errno.EISDIR, f"{path}: Is a directory")
        if not isinstance(node, File):
            raise enoent(path)
        return node.show()

    def write(self, path: str, text: str) -> None:
        node = self.resolve(path)
        if isinstance(node, Dir):
            raise KernelError(errno.EISDIR, f"{path}: Is a directory")
        if not isinstance(node, File):
            raise enoent(path)
        node.write(text)

    def listdir(self, path: str) -> list[str]:
        node = self.resolve(path)
        if not isinstance(node, Dir):
            raise KernelError(errno.ENOTDIR, f"{path}: Not a directory")
        return node.names()

    def glob(self, pattern: str) -> Iterator[str]:
        """Emulated paths matching a shell pattern (tmpfiles.d `w` lines allow globs); sorted."""
        parts = [x for x in pattern.split("/") if x]

        def walk(prefix: str, rest: list[str]) -> Iterator[str]:
            if not rest:
                yield prefix or "/"
                return
            head, tail = rest[0], rest[1:]
            try:
                names = self.listdir(prefix or "/")
            except OSError:
                return
            for name in sorted(fnmatch.filter(names, head) if any(c in head for c in "*?[") else [head]):
                if name in names:
                    yield from walk(f"{prefix}/{name}", tail)

        yield from walk("", parts)

    def emulated(self, path: str) -> bool:
        """True for a path the simulated server owns (not the controller's read-only view)."""
        try:
            node = self.resolve(path)
        except OSError:
            return False
        own = isinstance(node, File) and not isinstance(node, RealFile)
        return own and self._inside(os.path.normpath(path))
