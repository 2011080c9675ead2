"""`sim fault`: inject (and clear) faults into a running simulated server; `sim status` reads them back.

State files inside the server (docs/simulator.md): /var/lib/ascend-sim/faults.json (read by the fake Ascend
tools), /var/lib/ascend-sim/vllm-faults.json (read by the fake vLLM server), /var/lib/ascend-sim/sshd.disabled
(ssh.service and every SSH session stay down while it exists).

- unreachable: mode "stop" = sshd and its sessions stop (connections are refused); mode "pause" = the whole
  container is frozen (connections hang, like a hung host). `back` undoes both.
- npu-unhealthy / link-down: device ids into faults.json (link state is mirrored to the shared fabric).
- driver-fails: the next driver .run install fails (faults.json driver_fails).
- no-cpufreq: the server's CPUs have no cpufreq driver (hardware.json "cpufreq": false; the emulated kernel
  shows no scaling_governor anywhere), as with P-states the firmware keeps, CPPC off, or a VM.
- vllm: never_healthy / crash_after_s / slow_ms / wrong_answers (and the PD faults kv_transfer_failure /
  kv_never_freed / wrong_engine_id of payloads/fake-vllm/fake_vllm/faults.py), server-wide or for one API
  port.
- disk-full: faults.json disk_full, and /data (a tmpfs of the server) is shrunk to what it holds + 8 MiB with
  a filler leaving 128 KiB, so df, Ansible facts and writes all see a nearly full disk.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound

from ascend_sim.cluster import DATA_SIZE, LABEL, containers_of, ssh_banner
from ascend_sim.engine import SimError, client
from ascend_sim.state import ClusterState, SimServer, container_name, load_state, sim_root

STATE = "/var/lib/ascend-sim"
FAULTS = f"{STATE}/faults.json"
VLLM_FAULTS = f"{STATE}/vllm-faults.json"
# Serving containers mount /usr/local/dcmi (vllm-ascend's docker run), not /var/lib/ascend-sim: once the
# driver is installed (its hardware copy is there) the fake vLLM server reads this mirror instead.
VLLM_FAULTS_DCMI = "/usr/local/dcmi/ascend-sim-vllm-faults.json"
SSHD_DISABLED = f"{STATE}/sshd.disabled"
SIMBOOT = "/opt/ascend-sim/fakes/simboot.py"
FILLER = "/data/.ascend-sim-disk-full"

_WRITE_JSON = """
import json, os, sys, tempfile
path, text = sys.argv[1], sys.argv[2]
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
with os.fdopen(fd, "w") as f:
    f.write(text)
os.chmod(tmp, 0o644)
os.replace(tmp, path)
"""


class Server:
    """A running server of a cluster, addressed by name."""

    def __init__(self, root: Path, cluster: str, server: str) -> None:
        state = load_state(root, cluster)
        if state is None:
            raise SimError(
                f"No simulated cluster '{cluster}'. Fix: `orchestrator sim up --name {cluster}` first."
            )
        match = [s for s in state.servers if s.name == server]
        if not match:
            names = ", ".join(s.name for s in state.servers)
            raise SimError(f"Cluster '{cluster}' has no server '{server}'. Fix: use one of {names}.")
        self.info = match[0]
        self.cli = client()
        try:
            self.ctr = self.cli.containers.get(container_name(cluster, server))
        except NotFound:
            raise SimError(
                f"Server {server} of '{cluster}' has no container. "
                f"Fix: `orchestrator sim up --name {cluster}` recreates it."
            ) from None

    def sh(self, *argv: str) -> str:
        self.ctr.reload()
        if self.ctr.status == "paused":
            raise SimError(
                f"{self.info.name} is paused (fault 'unreachable --mode pause'). "
                f"Fix: `orchestrator sim fault back {self.info.name}` first."
            )
        if self.ctr.status != "running":
            raise SimError(f"{self.info.name} is {self.ctr.status}. Fix: `orchestrator sim up` starts it.")
        try:
            res = self.ctr.exec_run(list(argv))
        except APIError as exc:
            raise SimError(f"Running {argv[0]} in {self.info.name} failed: {exc}.") from None
        out = str(res.output.decode(errors="replace"))
        if res.exit_code != 0:
            raise SimError(f"`{' '.join(argv[:3])}` failed in {self.info.name}: {out.strip()}")
        return out

    def read_json(self, path: str) -> dict[str, Any]:
        text = self.sh("sh", "-c", f"cat {path} 2>/dev/null || true")
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError:
            data = {}
        return data if isinstance(data, dict) else {}

    def write_json(self, path: str, data: dict[str, Any]) -> None:
        self.sh("python3", "-c", _WRITE_JSON, path, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def update(self, path: str, changes: dict[str, Any]) -> dict[str, Any]:
        data = self.read_json(path)
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        self.write_json(path, data)
        return data


def _ids(current: Any, ids: list[int], clear: bool) -> list[int]:
    have = {int(i) for i in current or []}
    return sorted(have - set(ids)) if clear else sorted(have | set(ids))


def _devices(srv: Server, ids: list[int]) -> None:
    hw = srv.read_json(f"{STATE}/hardware.json")
    total = int(hw.get("cards") or 0) * int(hw.get("devices_per_card") or 0)
    bad = [i for i in ids if not 0 <= i < total]
    if bad:
        raise SimError(
            f"{srv.info.name} has devices 0-{total - 1}; {bad} do not exist. Fix: pick ids in range."
        )


def unreachable(srv: Server, mode: str) -> str:
    if mode == "pause":
        srv.ctr.pause()
        return f"{srv.info.name} is frozen (container paused): SSH to {srv.info.address} hangs"
    if mode != "stop":
        raise SimError(f"Unknown mode '{mode}'. Fix: use --mode stop or --mode pause.")
    # the file keeps ssh.service down, also across reboots (its drop-in's ConditionPathExists); every
    # process of the unit is killed, SSH sessions included (UsePAM no: they stay in ssh.service's cgroup)
    srv.sh("sh", "-c", f"touch {SSHD_DISABLED} && systemctl kill --kill-who=all --signal=SIGKILL ssh.service"
           "; systemctl stop ssh.service")
    _wait(lambda: not ssh_banner(srv.info.address, 0.3), f"sshd on {srv.info.address} to stop")
    return f"{srv.info.name} is unreachable: sshd stopped, SSH to {srv.info.address} is refused"


def back(srv: Server) -> str:
    srv.ctr.reload()
    if srv.ctr.status == "paused":
        srv.ctr.unpause()
    srv.sh("sh", "-c", f"rm -f {SSHD_DISABLED} && systemctl reset-failed ssh.service; "
           "systemctl start ssh.service")
    _wait(lambda: ssh_banner(srv.info.address, 0.5), f"sshd on {srv.info.address} to answer")
    return f"{srv.info.name} is reachable again at {srv.info.address}"


def reboot(srv: Server, timeout_s: float = 120.0) -> str:
    """`reboot` inside the server, like an operator would; returns once the new boot is complete (its
    kernel settings back at their defaults, then re-applied from the persistent files) and sshd answers."""
    old = srv.sh("cat", f"{STATE}/boot_id").strip()
    srv.sh("reboot")

    def booted() -> bool:
        try:
            now = srv.sh("sh", "-c", f"cat {STATE}/boot_id; systemctl is-system-running || true").split()
        except SimError:  # between the old boot and the new one
            return False
        done = len(now) == 2 and now[0] != old and now[1] in ("running", "degraded")
        return done and ssh_banner(srv.info.address, 0.5)

    _wait(booted, f"{srv.info.name} to boot again", timeout_s)
    new = srv.sh("cat", f"{STATE}/boot_id").strip()
    return f"{srv.info.name} rebooted (boot id {new}); boot log: /var/log/ascend-sim-boot.log"


def _wait(cond: Any, what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise SimError(f"Timed out waiting for {what}. Fix: check `docker logs` of the server's container.")


def npu_unhealthy(srv: Server, ids: list[int], level: str, clear: bool) -> str:
    _devices(srv, ids)
    data = srv.read_json(FAULTS)
    health = {k: v for k, v in (data.get("npu_health") or {}).items() if int(k) not in ids}
    if not clear and level != "Alarm":
        health.update({str(i): level for i in ids})
    new = _ids(data.get("npu_unhealthy"), ids, clear)
    srv.update(FAULTS, {"npu_unhealthy": new, "npu_health": health or None})
    return f"{srv.info.name}: unhealthy NPUs now {new or 'none'}"


def link_down(srv: Server, ids: list[int], clear: bool) -> str:
    _devices(srv, ids)
    new = _ids(srv.read_json(FAULTS).get("link_down"), ids, clear)
    srv.update(FAULTS, {"link_down": new})
    srv.sh("python3", SIMBOOT, "sync-fabric")
    return f"{srv.info.name}: NPU-NIC links down now {new or 'none'}"


def driver_fails(srv: Server, clear: bool) -> str:
    srv.update(FAULTS, {"driver_fails": not clear})
    return f"{srv.info.name}: driver installs {'work again' if clear else 'will fail'}"


def no_cpufreq(srv: Server, clear: bool) -> str:
    srv.update(f"{STATE}/hardware.json", {"cpufreq": None if clear else False})
    now = "cpufreq is back" if clear else "no cpufreq driver (no scaling_governor files)"
    return f"{srv.info.name}: {now}"


def vllm(srv: Server, settings: dict[str, Any], port: int | None, clear: bool) -> str:
    if clear:
        _write_vllm(srv, {})
        return f"{srv.info.name}: vLLM faults cleared"
    if not settings:
        raise SimError(
            "No vLLM fault given. Fix: add --never-healthy, --crash-after S, --slow-ms MS, --wrong-answers "
            "or --error-line LINE."
        )
    data = srv.read_json(VLLM_FAULTS)
    if port is None:
        data.update(settings)
    else:
        data.setdefault("ports", {}).setdefault(str(port), {}).update(settings)
    _write_vllm(srv, data)
    where = f" on port {port}" if port else ""
    return f"{srv.info.name}: vLLM faults{where}: {json.dumps(settings, sort_keys=True)}"


def _write_vllm(srv: Server, data: dict[str, Any]) -> None:
    srv.write_json(VLLM_FAULTS, data)
    if "yes" in srv.sh("sh", "-c", "test -f /usr/local/dcmi/ascend-sim-hardware.json && echo yes || true"):
        srv.write_json(VLLM_FAULTS_DCMI, data)


def disk_full(srv: Server, clear: bool) -> str:
    if clear:
        srv.sh("sh", "-c", f"rm -f {FILLER}; mount -o remount,size={DATA_SIZE} /data")
        srv.update(FAULTS, {"disk_full": False})
        return f"{srv.info.name}: /data has room again ({DATA_SIZE})"
    script = (
        "used=$(df -k --output=used /data | tail -1); "
        "mount -o remount,size=$(( used + 8192 ))k /data && "
        f"head -c {8064 * 1024} /dev/zero > {FILLER}; df -h /data | tail -1"
    )
    out = srv.sh("sh", "-c", script).strip()
    srv.update(FAULTS, {"disk_full": True})
    return f"{srv.info.name}: disk nearly full: {out}"


def clear_all(srv: Server) -> str:
    msgs = [back(srv)]
    srv.sh("sh", "-c", f"rm -f {FILLER}; mount -o remount,size={DATA_SIZE} /data 2>/dev/null || true")
    srv.write_json(FAULTS, {})
    srv.update(f"{STATE}/hardware.json", {"cpufreq": None})
    _write_vllm(srv, {})
    srv.sh("sh", "-c", f"python3 {SIMBOOT} sync-fabric >/dev/null 2>&1 || true")
    msgs.append(f"{srv.info.name}: all faults cleared")
    return "; ".join(msgs)


def known_clusters(root: Path) -> list[str]:
    names = {p.parent.name for p in sim_root(root).glob("*/cluster.json")}
    try:
        cli = client(timeout=10)
        ctrs = cli.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
        names |= {c.labels[LABEL] for c in ctrs}
    except SimError:
        pass
    return sorted(names)


@dataclass
class ServerStatus:
    name: str
    address: str
    roles: str
    container: str
    ssh: str
    driver: str
    faults: str


def status(root: Path, name: str) -> tuple[ClusterState | None, list[ServerStatus]]:
    state = load_state(root, name)
    cli = client(timeout=10)
    ctrs = containers_of(cli, name)
    rows: list[ServerStatus] = []
    servers = (
        state.servers
        if state
        else [
            SimServer(k, c.labels.get("io.ascend-sim.address", "?"), [], False)
            for k, c in sorted(ctrs.items())
        ]
    )
    for s in servers:
        ctr = ctrs.get(s.name)
        cstate = ctr.status if ctr is not None else "missing"
        driver, active = "-", "-"
        if cstate == "running":
            driver, active = _inspect(ctr)
        up_ = "up" if cstate == "running" and ssh_banner(s.address, 0.5) else "down"
        rows.append(ServerStatus(s.name, s.address, ",".join(s.roles), cstate, up_, driver, active))
    return state, rows


def _inspect(ctr: Any) -> tuple[str, str]:
    """(driver version, active faults) of a running server, from its state files."""
    files = ("/usr/local/Ascend/driver/version.info", f"{STATE}/faults.json", f"{STATE}/vllm-faults.json")
    script = "; echo '--'; ".join(f"cat {f} 2>/dev/null" for f in files) + f"; echo '--'; ls {STATE}"
    try:
        parts = [
            *ctr.exec_run(["sh", "-c", script]).output.decode(errors="replace").split("--\n"),
            "",
            "",
            "",
        ]
    except APIError:
        return "?", "?"
    driver = next((line[8:] for line in parts[0].splitlines() if line.startswith("Version=")), "none")
    active = ["unreachable"] if "sshd.disabled" in parts[3].split() else []
    for prefix, blob in (("", parts[1]), ("vllm:", parts[2])):
        try:
            data = json.loads(blob) if blob.strip() else {}
        except ValueError:
            data = {}
        for key, value in data.items():
            if key == "ports" and isinstance(value, dict):
                active += [f"vllm@{port}:{'+'.join(sorted(v))}" for port, v in value.items() if v]
            elif isinstance(value, list) and value:
                active.append(f"{prefix}{key}={'+'.join(str(i) for i in value)}")
            elif value and key != "npu_health":
                active.append(prefix + key if value is True else f"{prefix}{key}={value}")
    return driver, ",".join(active) or "-"
