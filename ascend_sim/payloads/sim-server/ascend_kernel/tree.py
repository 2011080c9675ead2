"""The node types of the emulated filesystem: files whose content the kernel computes when read and parses
when written, directories computed on lookup, symbolic links, and read-only views of real directories."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Mapping

from ascend_kernel.state import KernelError

Show = Callable[[], str]
Store = Callable[[str], None]


class Node:
    mode: int = 0o444


class File(Node):
    def __init__(self, show: Show, store: Store | None = None, mode: int | None = None) -> None:
        self.show = show
        self.store = store
        self.mode = mode if mode is not None else (0o644 if store else 0o444)

    def write(self, text: str) -> None:
        if self.store is None or not self.mode & 0o222:
            raise KernelError(errno.EACCES, "Permission denied")
        self.store(text)


class Dir(Node):
    mode = 0o555

    def child(self, name: str) -> Node | None:
        raise NotImplementedError

    def names(self) -> list[str]:
        raise NotImplementedError


class StaticDir(Dir):
    """A directory whose entries are computed on each lookup (cheap: a dict of small closures)."""

    def __init__(self, entries: Callable[[], dict[str, Node]], mode: int = 0o555) -> None:
        self.entries = entries
        self.mode = mode

    def child(self, name: str) -> Node | None:
        return self.entries().get(name)

    def names(self) -> list[str]:
        return list(self.entries())


def static(entries: Mapping[str, Node], mode: int = 0o555) -> StaticDir:
    fixed = dict(entries)
    return StaticDir(lambda: fixed, mode)


class Link(Node):
    mode = 0o777

    def __init__(self, target: str | Callable[[], str]) -> None:
        self._target = target

    @property
    def target(self) -> str:
        return self._target() if callable(self._target) else self._target


class RealFile(File):
    """A read-only view of a real file (opened relative to a directory fd taken before any overmount)."""

    def __init__(self, dir_fd: int, rel: str, mode: int) -> None:
        super().__init__(lambda: _read_at(dir_fd, rel), None, mode & 0o7777)

    def write(self, text: str) -> None:
        raise KernelError(errno.EROFS, "Read-only file system")


class RealDir(Dir):
    """A read-only view of a real directory, with emulated entries laid over it (they win by name)."""

    def __init__(self, dir_fd: int, rel: str, overlay: Dir | None = None, mode: int = 0o555) -> None:
        self.dir_fd = dir_fd
        self.rel = rel
        self.overlay = overlay
        self.mode = mode

    def child(self, name: str) -> Node | None:
        if self.overlay is not None:
            node = self.overlay.child(name)
            if node is not None:
                return node
        return real_node(self.dir_fd, os.path.join(self.rel, name))

    def names(self) -> list[str]:
        own = set(self.overlay.names()) if self.overlay is not None else set()
        try:
            fd = os.open(self.rel, os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.dir_fd)
        except OSError:
            return sorted(own)
        try:
            real = os.listdir(fd)
        finally:
            os.close(fd)
        return sorted(own) + sorted(n for n in real if n not in own)


def real_node(dir_fd: int, rel: str) -> Node | None:
    try:
        st = os.lstat(rel, dir_fd=dir_fd)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return RealDir(dir_fd, rel, None, st.st_mode & 0o7777)
    if stat.S_ISLNK(st.st_mode):
        return Link(os.readlink(rel, dir_fd=dir_fd))
    return RealFile(dir_fd, rel, st.st_mode)


def _read_at(dir_fd: int, rel: str) -> str:
    try:
        fd = os.open(rel, os.O_RDONLY, dir_fd=dir_fd)
    except OSError as exc:
        raise KernelError(exc.errno or errno.EIO, str(exc)) from None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError as exc:
        raise KernelError(exc.errno or errno.EIO, str(exc)) from None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def value_file(get: Callable[[], str], put: Callable[[str], None], parse: Callable[[str], str]) -> File:
    """A file backed by one stored value: show it with a newline, parse a write before storing it."""
    return File(lambda: get() + "\n", lambda text: put(parse(text)))


def ro(text: str | Callable[[], str]) -> File:
    return File(text if callable(text) else (lambda: text + "\n"))
