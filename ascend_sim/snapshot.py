"""Save a simulated cluster and restore it in seconds, under the same names and addresses.

`save`: the cluster's /data (a tmpfs) is archived, the servers power off cleanly (their services stop, each
inner dockerd stops its containers), each server's root filesystem is committed as an image
(`ascend-sim-snapshot:<id>-<server>`, labelled with the cluster and the address it keeps reserved), its inner
Docker data (the `-docker` volume) is moved into the snapshot folder, and so are the controller's files of
the cluster (`.orchestrator/`, `inventories/<cluster>/`). Afterwards the cluster is gone, as after `sim down`,
but its addresses stay reserved until the snapshot is removed.

`restore`: the same containers, volumes and controller files again, in the same project root (the spec and
the inventory hold absolute paths into it). The servers then boot: a restored cluster is a rebooted cluster
(kernel settings come back from the persistent files, services from their init scripts, containers by their
restart policy; /data is filled before anything starts). A snapshot can be restored any number of times,
one copy at a time.

`remove`: the images and the folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from docker.errors import ImageNotFound, NotFound

from ascend_sim import images
from ascend_sim.cluster import (
    LABEL,
    containers_of,
    create_server,
    server_volume,
    ssh_banner,
    wait_ssh,
)
from ascend_sim.engine import SimError, client, ensure_engine
from ascend_sim.spec_writer import remove_site
from ascend_sim.state import (
    ClusterState,
    SimServer,
    check_name,
    cluster_dir,
    container_name,
    load_state,
)

REPO = "ascend-sim-snapshot"
LABEL_ID = "io.ascend-sim.snapshot"
LABEL_DIR = "io.ascend-sim.snapshot-dir"  # the folder that holds the rest: without it the images are orphans
MANIFEST = "snapshot.json"
FORMAT = 1
STOP_TIMEOUT_S = 60
BOOT_TIMEOUT_S = 120.0
# ascend-sim-boot unpacks this into /data at the first boot after a restore, before any service starts
RESTORE_DATA = "/var/lib/ascend-sim/restore-data.tar"

Say = Callable[[str], None]
T = TypeVar("T")
R = TypeVar("R")


def _each(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    todo = list(items)
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(todo)))) as pool:
        return list(pool.map(fn, todo))


def _exec_to_file(cli: Any, ctr: Any, argv: list[str], out: Path) -> None:
    exec_id = cli.api.exec_create(ctr.id, argv, stdout=True, stderr=False)["Id"]
    with out.open("wb") as f:
        for chunk in cli.api.exec_start(exec_id, stream=True):
            f.write(chunk)
    code = cli.api.exec_inspect(exec_id).get("ExitCode")
    if code != 0:
        raise SimError(f"`{' '.join(argv)}` in {ctr.name} exited {code}. Fix: check the server's /data.")


def _move_children(src: Path, dest: Path) -> None:
    """Move a folder's content (both in Docker's volume store: renames, no copy)."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        for child in src.iterdir():
            os.rename(child, dest / child.name)
    except OSError as exc:
        raise SimError(f"Moving {src} to {dest} failed: {exc}. Fix: check dockerd's volume folder.") from None


def _copy_tree_into(src: Path, dest: Path) -> None:
    """cp -a (owners, modes, xattrs such as overlayfs' opaque marks, device nodes, hard links)."""
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["cp", "-a", "--reflink=auto", f"{src}/.", str(dest)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SimError(
            f"Copying {src} to {dest} failed: {proc.stderr.strip()[-400:]}. Fix: check free disk space."
        )


def _controller_files(root: Path, name: str) -> list[Path]:
    """What the controller holds of the cluster: .orchestrator/ (history, runs, facts, baselines, the sim's
    keys, packages and model) without other clusters' sim folders, and the site's inventory."""
    out: list[Path] = []
    orch = root / ".orchestrator"
    if orch.is_dir():
        for child in orch.iterdir():
            if child.name == "sim":
                out += [c for c in child.iterdir() if c.name == name]
            else:
                out.append(child)
    inv = root / "inventories" / name
    if inv.is_dir():
        out.append(inv)
    return out


def _snapshot_image(snap_id: str, server: str) -> str:
    return f"{REPO}:{snap_id}-{server}"


def _snapshot_volume(snap_id: str, server: str) -> str:
    """The server's inner Docker data while saved: a volume of its own (Docker's volume store holds both,
    so saving renames and restoring copies within one filesystem)."""
    return f"{REPO}-{snap_id}-{server}"


def save(root: Path, name: str, dest: Path, say: Say) -> list[str]:
    """Save the running cluster ``name`` into ``dest`` (a new or empty folder); the cluster is gone after."""
    check_name(name)
    state = load_state(root, name)
    if state is None:
        raise SimError(
            f"No simulated cluster '{name}' under {root}. Fix: `orchestrator sim up --name {name}`."
        )
    if dest.exists() and any(dest.iterdir()):
        raise SimError(f"{dest} is not empty. Fix: pick a new folder, or remove the old snapshot first.")
    cli = ensure_engine()
    ctrs = containers_of(cli, name)
    down = [s.name for s in state.servers if s.name not in ctrs or ctrs[s.name].status != "running"]
    if down:
        raise SimError(
            f"Server(s) {', '.join(down)} of '{name}' are not running. "
            f"Fix: `orchestrator sim up --name {name}` (or `sim fault back`), then save again."
        )
    started = time.monotonic()
    dest.mkdir(parents=True, exist_ok=True)
    snap_id = hashlib.sha256(f"{dest.resolve()}\0{time.time_ns()}".encode()).hexdigest()[:12]
    (dest / "data").mkdir()

    def archive_data(s: SimServer) -> None:  # /data is a tmpfs: archived while the server runs
        _exec_to_file(
            cli,
            ctrs[s.name],
            ["tar", "--format=posix", "-C", "/data", "-cf", "-", "."],
            dest / "data" / f"{s.name}.tar",
        )

    _each(archive_data, state.servers)
    _each(lambda s: ctrs[s.name].stop(timeout=STOP_TIMEOUT_S), state.servers)

    def keep(s: SimServer) -> str:
        ctr = ctrs[s.name]
        repo, tag = _snapshot_image(snap_id, s.name).split(":")
        ctr.commit(
            repository=repo,
            tag=tag,
            changes=[
                f'LABEL {LABEL}="" {images.LABEL_KIND}=snapshot {LABEL_ID}={snap_id} '
                f"{images.LABEL_SNAPSHOT_OF}={name} io.ascend-sim.address={s.address} "
                f'{LABEL_DIR}="{dest.resolve()}"'
            ],
        )
        volume = cli.volumes.get(f"{container_name(name, s.name)}-docker")
        kept = cli.volumes.create(
            _snapshot_volume(snap_id, s.name),
            labels={
                LABEL_ID: snap_id,
                images.LABEL_SNAPSHOT_OF: name,
                images.LABEL_KIND: "snapshot",
                LABEL_DIR: str(dest.resolve()),
            },
        )
        _move_children(Path(volume.attrs["Mountpoint"]), Path(kept.attrs["Mountpoint"]))
        ctr.remove(v=True, force=True)
        volume.remove(force=True)
        return s.name

    _each(keep, state.servers)
    controller = dest / "controller"
    for path in _controller_files(root, name):
        target = controller / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, target, symlinks=True)
        else:
            shutil.copy2(path, target)
    manifest = {
        "format": FORMAT,
        "id": snap_id,
        "root": str(root.resolve()),
        "cluster": asdict(state),
        "images": {s.name: _snapshot_image(snap_id, s.name) for s in state.servers},
        "volumes": {s.name: _snapshot_volume(snap_id, s.name) for s in state.servers},
        "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    remove_site(root, name)
    shutil.rmtree(cluster_dir(root, name), ignore_errors=True)
    say(f"saved {name} ({len(state.servers)} servers) in {time.monotonic() - started:.1f} s")
    return [f"saved {s.name} as {_snapshot_image(snap_id, s.name)}" for s in state.servers] + [
        f"wrote {dest}"
    ]


def load_manifest(src: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((src / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SimError(
            f"{src} holds no readable snapshot ({exc}). Fix: give the folder `sim snapshot save` wrote."
        ) from None
    if data.get("format") != FORMAT:
        raise SimError(
            f"{src} is a snapshot of format {data.get('format')}, not {FORMAT}. Fix: save it again."
        )
    return data


def _state(manifest: dict[str, Any]) -> ClusterState:
    raw = dict(manifest["cluster"])
    raw["servers"] = [SimServer(**s) for s in raw.get("servers", [])]
    return ClusterState(**raw)


def _put_data(ctr: Any, data_tar: Path, scratch: Path) -> None:
    """The saved /data archive into the container's root filesystem (RESTORE_DATA), before it starts."""
    wrapper = scratch / f"{ctr.name}.tar"
    with tarfile.open(wrapper, "w") as tar:
        tar.add(data_tar, arcname=RESTORE_DATA.lstrip("/"))
    with wrapper.open("rb") as f:
        if not ctr.put_archive("/", f):
            raise SimError(f"Could not put /data's archive into {ctr.name}. Fix: check dockerd's log.")
    wrapper.unlink()


def restore(root: Path, src: Path, say: Say) -> list[str]:
    """Bring the cluster saved in ``src`` back in ``root`` (the root it was saved from)."""
    manifest = load_manifest(src)
    state = _state(manifest)
    if Path(manifest["root"]) != root.resolve():
        raise SimError(
            f"{src} was saved from {manifest['root']}, not {root.resolve()}: its spec and inventory "
            f"name files there. Fix: restore it with --root {manifest['root']}."
        )
    cli = ensure_engine()
    if containers_of(cli, state.name):
        raise SimError(
            f"Cluster '{state.name}' is up. Fix: `orchestrator sim down --name {state.name}`, then restore."
        )
    for server, tag in manifest["images"].items():
        try:
            cli.images.get(tag)
            cli.volumes.get(manifest["volumes"][server])
        except (ImageNotFound, NotFound):
            raise SimError(
                f"The saved image or volume of {server} is gone. Fix: save the cluster again."
            ) from None
    busy = [s.address for s in state.servers if ssh_banner(s.address, 0.3)]
    if busy:
        raise SimError(
            f"Something answers on {', '.join(busy)}:22. Fix: stop it (another cluster?), then restore."
        )
    started = time.monotonic()
    controller = src / "controller"
    if controller.is_dir():
        shutil.copytree(controller, root, symlinks=True, dirs_exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="ascend-sim-restore-") as tmp:

        def bring_back(s: SimServer) -> Any:
            volume = server_volume(cli, state, s)
            saved = cli.volumes.get(manifest["volumes"][s.name])
            _copy_tree_into(Path(saved.attrs["Mountpoint"]), Path(volume.attrs["Mountpoint"]))
            ctr = create_server(cli, root, state, s, image=manifest["images"][s.name])
            data = src / "data" / f"{s.name}.tar"
            if data.is_file():
                _put_data(ctr, data, Path(tmp))
            ctr.start()
            return ctr

        _each(bring_back, state.servers)
    silent = wait_ssh([s.address for s in state.servers], BOOT_TIMEOUT_S)
    if silent:
        raise SimError(
            f"sshd did not answer on {', '.join(silent)} after the restore. Fix: read `docker logs "
            f"{container_name(state.name, '<server>')}`, then `sim down --name {state.name}` and restore "
            "again."
        )
    say(f"restored {state.name} ({len(state.servers)} servers) in {time.monotonic() - started:.1f} s")
    return [f"restored {s.name} at {s.address}" for s in state.servers]


def remove(src: Path) -> list[str]:
    """Remove the snapshot's images and its folder."""
    removed: list[str] = []
    try:
        snap_id = load_manifest(src)["id"]
    except SimError:
        snap_id = None
    if snap_id:
        cli = client()
        users = [
            c.name
            for c in cli.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
            if c.image is not None and (c.image.labels or {}).get(LABEL_ID) == snap_id
        ]
        if users:
            raise SimError(
                f"{', '.join(sorted(users))} run(s) from the snapshot {src}. Fix: `orchestrator sim down "
                "--name <cluster>` first, then remove the snapshot."
            )
        for vol in cli.volumes.list(filters={"label": f"{LABEL_ID}={snap_id}"}):
            with contextlib.suppress(NotFound):
                vol.remove(force=True)
                removed.append(f"volume {vol.name}")
        for img in cli.images.list(filters={"label": f"{LABEL_ID}={snap_id}"}):
            for tag in img.tags or [img.id]:
                try:
                    cli.images.remove(tag)
                    removed.append(f"image {tag}")
                except (ImageNotFound, NotFound):
                    continue
    if src.exists():
        shutil.rmtree(src)
        removed.append(f"files {src}")
    return removed


def prune() -> list[str]:
    """Remove the images and volumes of snapshots whose folder is gone (a test run that was killed, a
    folder deleted by hand) and that no container runs from."""
    cli = client()
    ctrs = cli.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
    used = {c.image.id for c in ctrs if c.image is not None}
    removed: list[str] = []
    for vol in cli.volumes.list(filters={"label": f"{images.LABEL_KIND}=snapshot"}):
        folder = (vol.attrs.get("Labels") or {}).get(LABEL_DIR)
        if folder and not Path(folder, MANIFEST).is_file():
            with contextlib.suppress(NotFound):
                vol.remove(force=True)
                removed.append(f"volume {vol.name}")
    for img in cli.images.list(filters={"label": f"{images.LABEL_KIND}=snapshot"}):
        folder = (img.labels or {}).get(LABEL_DIR)
        if folder and not Path(folder, MANIFEST).is_file() and img.id not in used:
            for tag in img.tags or [img.id]:
                with contextlib.suppress(ImageNotFound, NotFound):
                    cli.images.remove(tag)
                    removed.append(f"image {tag}")
    return removed
