"""What a fake Ray node knows about itself: its session files, its NPUs, Ray-style log lines, placement.

Session files, under ``$RAY_TMPDIR/ray`` (Ray's own variable; default ``/tmp/ray``) like the real ones:
``ray_current_cluster`` holds the GCS address of the cluster this machine last started or joined (``ray
status`` and a driver's ``ray.init()`` read it), ``session_latest/logs/`` the daemon's output. The fake adds
``fake-ray/node.json`` (``{"pid", "node_id", "node_ip", "head", "gcs_address"}``) so that ``ray stop`` finds
the process and a vLLM driver in the same container knows its local node.

NPU count, as ``ray start`` registers it (ray/_private/accelerators/npu.py and resource_and_label_spec.py):
the NPU resource given in ``--resources`` if any, else the detected count (AscendCL; here the
``/dev/davinciN`` present in ``$FAKE_VLLM_DEV_DIR`` or ``/dev``) capped by the length of
``ASCEND_RT_VISIBLE_DEVICES``. An explicit count above the mask's length is refused like Ray refuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import devices

DEFAULT_PORT = 6379


class RayError(Exception):
    """A failure the real Ray or vLLM reports as ``exc_type: message``."""

    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.message = message


def log(level: str, source: str, message: str) -> None:
    """Ray's record format off a terminal: ``2024-04-02 01:39:24,189<TAB>INFO scripts.py:744 -- message``."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
    print(f"{stamp}\t{level} {source} -- {message}", flush=True)


def temp_dir(env: dict[str, str]) -> Path:
    return Path(env.get("RAY_TMPDIR") or "/tmp") / "ray"


def node_file(env: dict[str, str]) -> Path:
    return temp_dir(env) / "fake-ray" / "node.json"


def current_cluster_file(env: dict[str, str]) -> Path:
    return temp_dir(env) / "ray_current_cluster"


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def new_node_id() -> str:
    """56 hex digits, the shape of a Ray NodeID."""
    return hashlib.sha224(uuid.uuid4().bytes).hexdigest()


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.strip().strip("'\"").rpartition(":")
    if not host or not port.isdigit():
        raise RayError("ValueError", f"Invalid address {address!r}: expected <ip>:<port>")
    return host, int(port)


@dataclass(frozen=True)
class NodeNpus:
    count: int
    visible: list[str] | None  # ASCEND_RT_VISIBLE_DEVICES split, None when unset
    given: list[int]  # /dev/davinciN present


def detect_npus(env: dict[str, str], resources: dict[str, float]) -> NodeNpus:
    given = devices.given_devices(Path(env.get("FAKE_VLLM_DEV_DIR") or "/dev"))
    mask = env.get("ASCEND_RT_VISIBLE_DEVICES")
    visible = None if mask is None else ([] if mask in ("", "NoDevFiles") else mask.split(","))
    if "NPU" in resources:
        count = int(resources["NPU"])
        if visible is not None and count > len(visible):
            raise RayError(
                "ValueError",
                f"Attempting to start raylet with {count} NPU, but ASCEND_RT_VISIBLE_DEVICES contains "
                f"{visible}.",
            )
        return NodeNpus(count, visible, given)
    count = len(given) if visible is None else min(len(given), len(visible))
    return NodeNpus(count, visible, given)


def place(bundles: list[dict[str, float]], nodes: list[dict[str, Any]]) -> list[str] | None:
    """PACK placement of NPU bundles: node ids per bundle, or None when the cluster cannot hold them.

    ``nodes``: ``{"node_id", "node_ip", "free"}`` (free NPUs) in registration order. A ``node:<ip>``
    key pins its bundle to that node (vLLM pins bundle 0 to the driver's node). PACK fills the pinned node
    first, then the nodes with the most free NPUs, as Ray packs onto as few nodes as it can.
    """
    free = {n["node_id"]: int(n["free"]) for n in nodes}
    ip_of = {n["node_id"]: n["node_ip"] for n in nodes}
    pinned = [k.removeprefix("node:") for b in bundles for k in b if k.startswith("node:")]
    order = sorted(free, key=lambda nid: (ip_of[nid] not in pinned, -free[nid]))
    out: list[str] = []
    for bundle in bundles:
        want = next((k.removeprefix("node:") for k in bundle if k.startswith("node:")), None)
        need = int(bundle.get("NPU", 0))
        choice = next(
            (nid for nid in order if free[nid] >= need and (want is None or ip_of[nid] == want)), None
        )
        if choice is None:
            return None
        free[choice] -= need
        out.append(choice)
    return out
