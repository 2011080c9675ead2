"""Where the simulated kernel keeps its state, and how it is read and changed.

Every absolute path is taken under $ASCEND_SIM_ROOT (default "/"), so unit tests run everything in a temp dir.
The live kernel state is one JSON file in /run/ascend-sim/kernel/ (a tmpfs: it survives nothing but the
simulated uptime); ascend-sim-init removes it at every boot, which resets every setting to its default:
  {"values": {"<emulated path>": "<stored value>"},   absent = the kernel default
   "modules": ["<name>", ...],                         loaded modules, oldest first
   "params": {"<module>": {"<param>": "<value>"}},     parameters of loaded modules
   "dmesg": ["<line>", ...]}                            the kernel log (`dmesg`)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator
from typing import Any

STATE_DIR = "/run/ascend-sim/kernel"
STATE_JSON = f"{STATE_DIR}/state.json"
MOUNT = f"{STATE_DIR}/fs"  # where the FUSE filesystem is mounted before its subtrees are bound in place
REAL_PROC = "/run/ascend-sim/proc"  # recursive bind of the container's own /proc: never written
HARDWARE_JSON = "/var/lib/ascend-sim/hardware.json"
BOOT_ID = "/var/lib/ascend-sim/boot_id"
DRIVER_VERSION_INFO = "/usr/local/Ascend/driver/version.info"
DMESG_MAX = 500


class KernelError(OSError):
    """What the kernel answers a bad request with: an errno (EINVAL, EACCES, ...) and a log-friendly text."""

    def __init__(self, code: int, text: str = "") -> None:
        super().__init__(code, text or os.strerror(code))


def root() -> str:
    return os.environ.get("ASCEND_SIM_ROOT") or "/"


def p(path: str) -> str:
    """The real location of an absolute path of the simulated server."""
    return os.path.join(root(), path.lstrip("/"))


def read_text(path: str, default: str = "") -> str:
    try:
        with open(p(path), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return default


def _empty() -> dict[str, Any]:
    return {"values": {}, "modules": [], "params": {}, "dmesg": []}


class State:
    """The kernel state file. `load()` is cached on the file's identity; `change()` locks, yields the data to
    modify in place and writes it back atomically."""

    def __init__(self) -> None:
        self._key: tuple[int, int, int] | None = None
        self._data: dict[str, Any] = _empty()

    @property
    def path(self) -> str:
        return p(STATE_JSON)

    def load(self) -> dict[str, Any]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._key, self._data = None, _empty()
            return self._data
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self._key:
            try:
                with open(self.path, encoding="utf-8") as f:
                    raw = json.load(f)
            except (OSError, ValueError):
                raw = {}
            data = _empty()
            for k, default in list(data.items()):
                v = raw.get(k) if isinstance(raw, dict) else None
                data[k] = v if isinstance(v, type(default)) else default
            self._key, self._data = key, data
        return self._data

    @contextlib.contextmanager
    def change(self) -> Iterator[dict[str, Any]]:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path + ".lock", "a", encoding="utf-8") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            self._key = None
            data = json.loads(json.dumps(self.load()))
            yield data
            data["dmesg"] = data["dmesg"][-DMESG_MAX:]
            tmp = f"{self.path}.tmp-{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f, sort_keys=True)
            os.replace(tmp, self.path)
            self._key = None

    def value(self, path: str) -> str | None:
        v = self.load()["values"].get(path)
        return v if isinstance(v, str) else None

    def set_value(self, path: str, value: str | None) -> None:
        with self.change() as data:
            if value is None:
                data["values"].pop(path, None)
            else:
                data["values"][path] = value

    def log(self, line: str) -> None:
        with self.change() as data:
            data["dmesg"].append(line)


def uptime_stamp() -> str:
    """A dmesg-like time stamp: seconds since the simulated boot (the boot id file's age)."""
    try:
        age = max(0.0, time.time() - os.stat(p(BOOT_ID)).st_mtime)
    except OSError:
        age = 0.0
    return f"[{age:12.6f}]"


def reset() -> None:
    """What a boot does to the kernel: every emulated setting back to its default, no module loaded."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(p(STATE_JSON))


def enoent(path: str) -> KernelError:
    return KernelError(errno.ENOENT, f"{path}: No such file or directory")
