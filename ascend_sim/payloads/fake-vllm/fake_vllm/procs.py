"""The NPU process table the fake ``npu-smi`` prints: ``/var/lib/ascend-sim/processes.json``.

Layout: ``{"<physical NPU index>": [{"pid": 7, "name": "VLLMWorker_TP", "memory_mb": 58982, "owner": ...}]}``.
A running server holds one entry per visible NPU ("VLLM::EngineCore" when TP is 1, else "VLLMWorker_TP");
it removes its entries on exit (SIGTERM / SIGINT / crash). ``owner`` (hostname:pid:nonce) tells entries apart:
every container has its own pid namespace, so two servers may both be pid 1. ``pid`` is the pid inside the
container. A SIGKILLed server leaves its entries behind, as a killed process would in a stale table.

Where the shared state files are (:func:`state_path`, also used for ``vllm-faults.json``): the explicit
environment variable (``$FAKE_VLLM_PROCESSES``), else the server's ``/var/lib/ascend-sim/`` when it is
visible in the container (its ``hardware.json`` is there: the runtime bind-mounted the directory), else
``/usr/local/dcmi/ascend-sim-<name>`` when the driver's hardware copy
``/usr/local/dcmi/ascend-sim-hardware.json`` is there (vllm-ascend's documented ``docker run`` mounts
/usr/local/dcmi), else the container's own
``/var/lib/ascend-sim/`` (invisible to the host's npu-smi). Mount directories, not files, so the atomic rename
works. Writers take ``flock`` on ``<file>.lock`` beside the table.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import vlog

STATE_DIR = Path("/var/lib/ascend-sim")
DCMI_DIR = Path("/usr/local/dcmi")


def state_path(env: dict[str, str], env_var: str, name: str) -> Path:
    """The shared simulator state file ``name`` ('processes.json', 'vllm-faults.json'), see above."""
    if env.get(env_var):
        return Path(env[env_var])
    if (STATE_DIR / "hardware.json").is_file():
        return STATE_DIR / name
    if (DCMI_DIR / "ascend-sim-hardware.json").is_file():
        return DCMI_DIR / f"ascend-sim-{name}"
    return STATE_DIR / name


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[dict[str, Any]]:
    """Hold the table's lock; yields the parsed table, written back atomically on exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            table = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(table, dict):
                table = {}
        except (OSError, ValueError):
            table = {}
        yield table
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)


class ProcessTable:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._registered = False

    def register(self, devices: list[int], name: str, memory_mb: int) -> None:
        entry = {"pid": os.getpid(), "name": name, "memory_mb": memory_mb, "owner": self.owner}
        try:
            with _locked(self.path) as table:
                for dev in devices:
                    rows = [r for r in table.get(str(dev), []) if r.get("owner") != self.owner]
                    table[str(dev)] = [*rows, dict(entry)]
            self._registered = True
        except OSError as exc:
            vlog.warning("npu_worker.py:112", f"cannot record NPU processes in {self.path}: {exc}")

    def unregister(self) -> None:
        if not self._registered:
            return
        try:
            with _locked(self.path) as table:
                for dev in list(table):
                    rows = [r for r in table[dev] if r.get("owner") != self.owner]
                    if rows:
                        table[dev] = rows
                    else:
                        del table[dev]
            self._registered = False
        except OSError as exc:
            vlog.warning("npu_worker.py:131", f"cannot remove NPU processes from {self.path}: {exc}")


def worker_name(tp: int) -> str:
    return "VLLM::EngineCore" if tp == 1 else "VLLMWorker_TP"


HARDWARE_FILES = (STATE_DIR / "hardware.json", DCMI_DIR / "ascend-sim-hardware.json")


def _hbm_mb(hardware_files: list[Path]) -> int | None:
    for path in hardware_files:
        try:
            hbm = json.loads(path.read_text(encoding="utf-8")).get("hbm_mb")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(hbm, int) and hbm > 0:
            return hbm
    return None


def memory_mb(
    hardware_files: list[Path], weight_bytes: int, devices: int, gpu_memory_utilization: float
) -> int:
    """HBM a worker holds: the --gpu-memory-utilization share of the NPU's HBM (``hbm_mb`` of the first
    readable hardware.json: the server's, or the driver's copy under /usr/local/dcmi that serving containers
    mount), at least its slice of the weights; without one, the weights slice plus a 1 GiB KV cache."""
    weights_mb = weight_bytes // max(devices, 1) // (1 << 20)
    hbm = _hbm_mb(hardware_files)
    if hbm is not None:
        return max(weights_mb, int(hbm * gpu_memory_utilization))
    return weights_mb + 1024
