"""What the controller remembers about a simulated cluster (.orchestrator/sim/<cluster>/cluster.json), where
its files live, and how Docker objects are named. Shared by the lifecycle (cluster.py), the spec writer and
the fault injector; imports nothing else of the simulator."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ascend_sim.engine import SimError

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,28}[a-z0-9]$")


@dataclass
class SimServer:
    name: str
    address: str
    roles: list[str]
    npu: bool


@dataclass
class ClusterState:
    name: str
    profile: str
    nodes: int
    gateway: bool
    monitoring: bool
    span: int = 1  # NPU servers of the first replica (multi-node: data parallel across them)
    layout: str = "default"  # replica layout of the spec (spec_writer.LAYOUTS)
    servers: list[SimServer] = field(default_factory=list)
    image: str = ""
    # the last N NPU servers ship with the spec's firmware already in flash (flashed at the factory: no
    # firmware version.info), the others with the older spec_writer.FACTORY_FIRMWARE
    current_firmware: int = 0

    def factory_current(self) -> set[str]:
        npu = [s.name for s in self.servers if s.npu]
        return set(npu[len(npu) - self.current_firmware :]) if self.current_firmware else set()

    def same_shape(self, other: ClusterState) -> bool:
        return self.describe() == other.describe()

    def describe(self) -> str:
        extra = "".join(
            f" + {x}" for x, on in (("gateway", self.gateway), ("monitoring", self.monitoring)) if on
        )
        span = f", first replica on {self.span} servers" if self.span > 1 else ""
        layout = f", layout {self.layout}" if self.layout != "default" else ""
        fw = f", {self.current_firmware} with current factory firmware" if self.current_firmware else ""
        return f"{self.nodes} x {self.profile}{span}{layout}{fw}{extra}"


def container_name(cluster: str, server: str) -> str:
    return f"ascend-sim-{cluster}-{server}"


def sim_root(root: Path) -> Path:
    return root / ".orchestrator" / "sim"


def cluster_dir(root: Path, name: str) -> Path:
    return sim_root(root) / name


def check_name(name: str) -> None:
    if not NAME_RE.match(name):
        raise SimError(
            f"Cluster name '{name}' is not usable. Fix: use 2-30 lower-case letters, digits and '-', "
            "starting with a letter (it names containers, volumes and inventories/<name>/)."
        )


def load_state(root: Path, name: str) -> ClusterState | None:
    path = cluster_dir(root, name) / "cluster.json"
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        raw["servers"] = [SimServer(**s) for s in raw.get("servers", [])]
        return ClusterState(**raw)
    except (OSError, ValueError, TypeError) as exc:
        raise SimError(
            f"{path} is unreadable ({exc}). Fix: `orchestrator sim down --name {name}`, then `sim up` again."
        ) from None


def save_state(root: Path, state: ClusterState) -> bool:
    return write_if_changed(
        cluster_dir(root, state.name) / "cluster.json", json.dumps(asdict(state), indent=2) + "\n"
    )


def write_if_changed(path: Path, text: str, mode: int = 0o644) -> bool:
    """Atomically write text unless the file already holds it; True when it changed."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return True
