"""Lifecycle of a simulated Ascend cluster: `sim up` (idempotent), `sim down`, `sim status`.

A server is a container `ascend-sim-<cluster>-<server>` on the host network whose sshd listens on its own
127.0.0.N (N from 2 up, not used by another sim cluster), with a Docker volume `...-docker` for its inner
dockerd and the cluster's fabric dir bind-mounted at /var/lib/ascend-sim/fabric. Every Docker object carries
the label io.ascend-sim.cluster=<cluster>. Controller files live in .orchestrator/sim/<cluster>/ (SSH keys,
known_hosts, fabric, packages, model, cluster.json); the spec goes to inventories/<cluster>/site.yaml.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound

from ascend_sim import images, spec_pd, spec_writer
from ascend_sim.engine import SimError, client, ensure_engine
from ascend_sim.spec_writer import PROFILES, hardware_json
from ascend_sim.state import (
    ClusterState,
    SimServer,
    check_name,
    cluster_dir,
    container_name,
    load_state,
    save_state,
    sim_root,
    write_if_changed,
)

LABEL = images.LABEL_CLUSTER
SSH_WAIT_S = 30.0
DATA_SIZE = "16g"  # /data (weights) is a tmpfs of this size: `sim fault disk-full` shrinks it

Say = Callable[[str], None]


def plan_servers(state: ClusterState) -> list[tuple[str, list[str], bool]]:
    prefix = PROFILES[state.profile].prefix
    out: list[tuple[str, list[str], bool]] = []
    for i in range(1, state.nodes + 1):
        roles = ["npu"]
        if i == 1:
            roles += ["build"] if state.monitoring else ["build", "monitoring"]
        out.append((f"{prefix}-{i:02d}", roles, True))
    if state.gateway:
        out.append(("gw-01", ["gateway"], False))
    if state.monitoring:
        out.append(("mon-01", ["monitoring"], False))
    return out


def _used_addresses(cli: Any, root: Path, cluster: str) -> set[str]:
    used = set()
    for c in cli.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        if c.labels.get(LABEL) != cluster and c.labels.get("io.ascend-sim.address"):
            used.add(c.labels["io.ascend-sim.address"])
    # a saved cluster (ascend_sim/snapshot.py) keeps its addresses until its snapshot is removed
    for img in cli.images.list(filters={"label": f"{images.LABEL_KIND}=snapshot"}):
        labels = img.labels or {}
        if labels.get(images.LABEL_SNAPSHOT_OF) != cluster and labels.get("io.ascend-sim.address"):
            used.add(labels["io.ascend-sim.address"])
    for other in sim_root(root).glob("*/cluster.json"):
        if other.parent.name != cluster:
            st = load_state(root, other.parent.name)
            used.update(s.address for s in (st.servers if st else []))
    return used


def _port_free(address: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, 22))
        except OSError:
            return False
    return True


def allocate_addresses(cli: Any, root: Path, cluster: str, count: int) -> list[str]:
    used = _used_addresses(cli, root, cluster)
    out: list[str] = []
    for n in range(2, 255):
        addr = f"127.0.0.{n}"
        if addr not in used and _port_free(addr):
            out.append(addr)
            if len(out) == count:
                return out
    raise SimError(
        f"No free 127.0.0.N address with port 22 for {count} servers. "
        "Fix: `orchestrator sim down` clusters you no longer need."
    )


def host_key(cdir: Path, server: str) -> Path:
    return cdir / "hostkeys" / server / "ssh_host_ed25519_key"


def _keygen(path: Path, comment: str) -> None:
    if shutil.which("ssh-keygen") is None:
        raise SimError(
            "ssh-keygen is not installed. Fix: apt-get install openssh-client (Ansible needs ssh too)."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SimError(
            f"ssh-keygen failed for {path}: {proc.stderr.strip()}. Fix: check that the folder is writable."
        )


def ensure_keys(cdir: Path, servers: list[SimServer]) -> list[str]:
    """The cluster's client key pair, one host key per server and the known_hosts that pins them."""
    changes: list[str] = []
    if not (cdir / "id_ed25519").is_file():
        _keygen(cdir / "id_ed25519", f"orchestrator-sim-{cdir.name}")
        changes.append(f"made SSH key {cdir / 'id_ed25519'}")
    lines = []
    for s in servers:
        key = host_key(cdir, s.name)
        if not key.is_file():
            _keygen(key, f"root@{s.name}")
        lines.append(f"{s.address} {' '.join(key.with_suffix('.pub').read_text().split()[:2])}\n")
    if write_if_changed(cdir / "known_hosts", "".join(lines)):
        changes.append(f"wrote {cdir / 'known_hosts'}")
    return changes


def _tar(files: dict[str, tuple[bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, (data, mode) in sorted(files.items()):
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def server_volume(cli: Any, state: ClusterState, server: SimServer) -> Any:
    """The server's inner Docker data volume (created when missing), labelled with the cluster."""
    volume = f"{container_name(state.name, server.name)}-docker"
    labels = {LABEL: state.name, "io.ascend-sim.server": server.name, "io.ascend-sim.address": server.address}
    try:
        return cli.volumes.get(volume)
    except NotFound:
        return cli.volumes.create(volume, labels=labels)


def create_server(
    cli: Any, root: Path, state: ClusterState, server: SimServer, *, image: str | None = None
) -> Any:
    """Create (not start) the server's container from ``image`` (default: the cluster's server image)."""
    cdir = cluster_dir(root, state.name)
    volume = server_volume(cli, state, server)
    labels = {LABEL: state.name, "io.ascend-sim.server": server.name, "io.ascend-sim.address": server.address}
    return cli.containers.create(
        image or state.image,
        name=container_name(state.name, server.name),
        hostname=server.name,
        network_mode="host",
        # SYS_PTRACE: root reads /proc/<pid>/exe of every process, as on a real server; Debian's init scripts
        # find a daemon that runs as its own user (prometheus, prometheus-node-exporter) with
        # `start-stop-daemon --exec`, which without it neither stops nor sees the running daemon.
        cap_add=["SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE"],
        security_opt=["seccomp=unconfined", "apparmor=unconfined"],
        devices=["/dev/fuse:/dev/fuse:rwm"],  # the emulated kernel interfaces (ascend_kernel)
        volumes={
            "/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "rw"},
            volume.name: {"bind": "/var/lib/docker", "mode": "rw"},
            str((cdir / "fabric").resolve()): {"bind": "/var/lib/ascend-sim/fabric", "mode": "rw"},
        },
        tmpfs={"/run": "mode=755", "/data": f"size={DATA_SIZE},mode=755"},
        extra_hosts={s.name: s.address for s in state.servers},
        environment={
            "ASCEND_SIM_ADDRESS": server.address,
            "ASCEND_SIM_SERVER": server.name,
            "ASCEND_SIM_CLUSTER": state.name,
        },
        labels={**labels, images.LABEL_KIND: "server", "io.ascend-sim.roles": ",".join(server.roles)},
        detach=True,
    )


def _create_server(cli: Any, root: Path, state: ClusterState, server: SimServer) -> None:
    cdir = cluster_dir(root, state.name)
    hostkey = host_key(cdir, server.name)
    ctr = create_server(cli, root, state, server)
    hw = hardware_json(state.profile, server, current_firmware=server.name in state.factory_current())
    ctr.put_archive(
        "/",
        _tar(
            {
                "/etc/ssh/ssh_host_ed25519_key": (hostkey.read_bytes(), 0o600),
                "/etc/ssh/ssh_host_ed25519_key.pub": (hostkey.with_suffix(".pub").read_bytes(), 0o644),
                "/root/.ssh/authorized_keys": ((cdir / "id_ed25519.pub").read_bytes(), 0o600),
                "/var/lib/ascend-sim/hardware.json": (json.dumps(hw, indent=2).encode(), 0o644),
            }
        ),
    )
    ctr.start()


def wait_ssh(addresses: list[str], timeout_s: float = SSH_WAIT_S) -> list[str]:
    """Wait until every sshd answers with its banner; returns the addresses that never did."""
    pending = set(addresses)
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        for addr in sorted(pending):
            if ssh_banner(addr, 0.5):
                pending.discard(addr)
        if pending:
            time.sleep(0.1)
    return sorted(pending)


def ssh_banner(address: str, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((address, 22), timeout=timeout) as s:
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def containers_of(cli: Any, name: str) -> dict[str, Any]:
    return {
        c.labels.get("io.ascend-sim.server", c.name): c
        for c in cli.containers.list(all=True, filters={"label": f"{LABEL}={name}"}, ignore_removed=True)
    }


@contextmanager
def _host_lock() -> Iterator[None]:
    """One `sim up` at a time picks addresses on this host (flock on the temp dir: no lock file left)."""
    fd = os.open(tempfile.gettempdir(), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _check_shape(wanted: ClusterState) -> None:
    check_name(wanted.name)
    if wanted.profile not in PROFILES:
        raise SimError(f"Unknown profile '{wanted.profile}'. Fix: use one of {', '.join(PROFILES)}.")
    if not 1 <= wanted.nodes <= 32:
        raise SimError(f"--nodes {wanted.nodes} is out of range. Fix: give 1 to 32 servers.")
    if not 1 <= wanted.span <= wanted.nodes or (
        wanted.span > 1 and PROFILES[wanted.profile].replicas_per_server > 1
    ):
        raise SimError(
            f"--span {wanted.span} does not fit {wanted.nodes} x {wanted.profile}. Fix: give 1 to --nodes "
            "servers, and 1 for profiles that put several replicas on one server."
        )
    if not 0 <= wanted.current_firmware <= wanted.nodes:
        raise SimError(f"--current-firmware {wanted.current_firmware}: give 0 to --nodes ({wanted.nodes}).")
    layouts = spec_writer.LAYOUTS
    if wanted.layout not in layouts:
        raise SimError(f"Unknown layout '{wanted.layout}'. Fix: use one of {', '.join(layouts)}.")
    least = spec_writer.MIXED_MIN_NODES
    if wanted.layout == "mixed" and (wanted.nodes < least or wanted.span > 1):
        raise SimError(
            f"--layout mixed needs {least} or more NPU servers and no --span (it places a two-server "
            f"replica itself); got --nodes {wanted.nodes} --span {wanted.span}. Fix: `sim up --nodes {least} "
            "--layout mixed`."
        )
    if wanted.layout == "pd" and (wanted.nodes != spec_pd.PD_NODES or wanted.span > 1 or not wanted.gateway):
        n, gw = spec_pd.PD_NODES, "" if wanted.gateway else " without --gateway"
        raise SimError(
            f"--layout pd needs exactly {n} NPU servers, no --span (it places prefill on the first server "
            "and decode over the other two itself) and --gateway (a PD site is served through the gateway's "
            f"prefill-then-decode proxy); got --nodes {wanted.nodes} --span {wanted.span}{gw}. "
            f"Fix: `sim up --nodes {n} --gateway --layout pd`."
        )


def up(root: Path, wanted: ClusterState, say: Say, *, image_base: bool = True) -> list[str]:
    """Bring the cluster to the wanted shape; returns what changed (empty: nothing). ``image_base``: load
    the base image(s) the image and gateway phases build FROM into the build and gateway hosts' Docker
    (a few seconds per host; not needed when no image is built on the cluster)."""
    _check_shape(wanted)
    spec_writer.check_inventory_free(root, wanted.name)
    state = load_state(root, wanted.name)
    if state is not None and not state.same_shape(wanted):
        raise SimError(
            f"Cluster '{wanted.name}' exists as {state.describe()}, not {wanted.describe()}. "
            f"Fix: `orchestrator sim down --name {wanted.name}` first, or pick another --name."
        )
    cli = ensure_engine()
    existing = containers_of(cli, wanted.name)
    if state is None and existing:
        raise SimError(
            f"Containers of a cluster '{wanted.name}' exist but its files are not under {sim_root(root)}. "
            f"Fix: `orchestrator sim down --name {wanted.name}` (removes them), or pick another --name."
        )
    changes: list[str] = []
    state = state or wanted
    cdir = cluster_dir(root, state.name)
    (cdir / "fabric").mkdir(parents=True, exist_ok=True)
    missing = [s.name for s in state.servers if s.name not in existing] if state.servers else ["*"]
    if missing and not (state.image and images.image_exists(cli, state.image)):
        base = images.build_base(cli)
        state.image, built = images.build_server(cli, state.name, base)
        if built:
            changes.append(f"built image {state.image}")
    with _host_lock():  # address choice and container creation, against concurrent `sim up`s
        if not state.servers:
            shape = plan_servers(state)
            addrs = allocate_addresses(cli, root, state.name, len(shape))
            state.servers = [SimServer(n, a, r, npu) for (n, r, npu), a in zip(shape, addrs, strict=True)]
        changes += ensure_keys(cdir, state.servers)
        if save_state(root, state):
            changes.append(f"wrote {cdir / 'cluster.json'}")
        for server in (s for s in state.servers if s.name not in existing):
            _create_server(cli, root, state, server)
            changes.append(f"created server {server.name} at {server.address}")
    for name, ctr in existing.items():
        if ctr.status in ("created", "exited", "dead"):
            ctr.start()
            changes.append(f"started stopped server {name}")
        elif ctr.status == "paused":
            say(f"note: server {name} is paused (fault 'unreachable --mode pause'); `sim fault back {name}`")
    silent = wait_ssh(
        [
            s.address
            for s in state.servers
            if existing.get(s.name) is None or existing[s.name].status != "paused"
        ]
    )
    if silent:
        raise SimError(
            f"sshd did not answer on {', '.join(silent)} within {SSH_WAIT_S:.0f} s. "
            f"Fix: read `docker logs {container_name(state.name, '<server>')}`, "
            "then `orchestrator sim down` and `orchestrator sim up`."
        )
    more, bases = spec_writer.write_site(root, state, cdir, say)
    changes += more
    if image_base:
        changes += _seed_bases(cli, state, bases)
    return changes


def _seed_bases(cli: Any, state: ClusterState, bases: list[str]) -> list[str]:
    """The build hosts get the plan's CANN base tags, the gateway hosts the router image's FROM."""
    todo = [(s, [*bases, images.base_tag()]) for s in state.servers if "build" in s.roles]
    todo += [
        (s, [images.base_tag()]) for s in state.servers if "gateway" in s.roles and "build" not in s.roles
    ]

    def seed(job: tuple[SimServer, list[str]]) -> str | None:
        server, tags = job
        ctr = cli.containers.get(container_name(state.name, server.name))
        if images.seed_inner_base(ctr, tags):
            return f"loaded {', '.join(tags[:-1] or tags)} into {server.name}'s Docker (no registry)"
        return None

    with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
        return [c for c in pool.map(seed, todo) if c]


def down(root: Path, name: str, *, purge: bool, say: Say) -> list[str]:
    """Remove every container, volume, image tag and file of the cluster; returns what was removed."""
    check_name(name)
    cli = client()
    removed: list[str] = []

    def _remove(ctr: Any) -> str:
        with contextlib.suppress(NotFound):  # no graceful stop: what the server ran ends with its PID 1
            ctr.remove(v=True, force=True)
        return f"container {ctr.name}"

    ctrs = list(containers_of(cli, name).values())
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(ctrs)))) as pool:
        removed += pool.map(_remove, ctrs)
    for vol in cli.volumes.list(filters={"label": f"{LABEL}={name}"}):
        try:
            vol.remove(force=True)
            removed.append(f"volume {vol.name}")
        except (NotFound, APIError) as exc:
            say(f"warning: volume {vol.name} not removed: {exc}")
    removed += [f"image {t}" for t in images.remove_cluster_images(cli, name)]
    if purge:
        removed += [f"image {t}" for t in images.remove_base_images(cli)]
    removed += spec_writer.remove_site(root, name)
    cdir = cluster_dir(root, name)
    if cdir.exists():
        shutil.rmtree(cdir)
        removed.append(f"files {cdir}")
    for d in (sim_root(root), sim_root(root).parent):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return removed
