"""Images of the simulated cluster, built without any registry.

- `ascend-sim-base:<hash12>`: debootstrap bookworm minbase + the packages below, imported with
  `docker import`. The tag is a content hash of the recipe, so a built base is reused until the recipe
  changes (kept by `sim down`, removed by `sim down --purge`).
- `ascend-sim-server:<hash12>`: FROM the base (which has systemd, PID 1 of every server), adds
  `payloads/sim-server/` (the boot script systemd runs for reboots, the units and generator in `systemd/`,
  lspci and kmod wrappers, sshd config, the emulated kernel `ascend_kernel/` and the fake tools of
  `ascend_fakes/`). One per content hash (base + ascend_sim/payloads/sim-server/),
  shared by every cluster, kept by `sim down` (removed by `sim down --purge`).
- `ascend-sim-server:<hash12>-<cluster>`: the shared image plus the label `io.ascend-sim.cluster=<cluster>`
  (a configuration-only layer: nothing copied), which is what `sim down` removes.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docker.errors import APIError, BuildError, ImageNotFound

from ascend_sim.engine import SimError

BASE_REPO = "ascend-sim-base"
SERVER_REPO = "ascend-sim-server"
LABEL_CLUSTER = "io.ascend-sim.cluster"
LABEL_KIND = "io.ascend-sim.kind"
LABEL_SNAPSHOT_OF = "io.ascend-sim.snapshot-of"  # the cluster a saved server image belongs to
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# What the simulator itself needs (python3, sshd, dockerd, python3-fusepy + libfuse2 for the emulated kernel
# interfaces), plus the baseline of an installed Debian server the host roles expect to find rather than
# download on every test run: kmod/procps/pciutils/iproute2 (preflight and tuning probes), irqbalance
# (enabled at boot as on Ubuntu/openEuler servers, so that disabling it is exercised), python3-apt (Ansible's
# apt module would install it on first use), dkms + make + gcc (the driver's DKMS prerequisites), net-tools
# (the driver installer refuses to run without ifconfig: "The list of missing tools").
BASE_PACKAGES = (
    "python3",
    "openssh-server",
    "iproute2",
    "kmod",
    "procps",
    "sudo",
    "pciutils",
    "docker.io",
    "rsync",
    "python3-fusepy",
    "irqbalance",
    "python3-apt",
    "dkms",
    "make",
    "gcc",
    "net-tools",
    "dpkg-dev",
    "systemd",
    "systemd-sysv",
    "dbus",
)
# What the roles install with apt on a Debian server (container_runtime: python3-docker beside docker.io;
# node_exporter; prometheus on the monitoring host; npu_exporter: unzip; vllm_image: zstd), downloaded with
# their dependencies and recommends (what `apt-get install` picks on a server) into a flat repository inside
# the image, which is the servers' only apt source: a test run installs the same packages through the same
# tasks, with no download and no network, and `apt-get update` reads an index of ~70 packages, not Debian's.
REPO_DIR = "/srv/ascend-sim-apt"
REPO_PACKAGES = ("docker.io", "python3-docker", "prometheus-node-exporter", "prometheus", "unzip", "zstd")
# Run in the debootstrapped tree (chroot) before it is imported: no caches, no host keys (each server gets
# its own, made by `sim up`), sshd's privilege-separation dir.
BASE_POST = f"""set -e
apt-get clean
apt-get update -q
apt-get install --download-only -y -q {' '.join(REPO_PACKAGES)}
mkdir -p {REPO_DIR}
mv /var/cache/apt/archives/*.deb {REPO_DIR}/
(cd {REPO_DIR} && dpkg-scanpackages --multiversion . /dev/null > Packages 2>/dev/null)
echo 'deb [trusted=yes] file:{REPO_DIR} ./' > /etc/apt/sources.list
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log /var/log/apt/*
rm -f /etc/ssh/ssh_host_*
mkdir -p /run/sshd /var/lib/ascend-sim
: > /etc/machine-id
"""
BASE_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["/bin/bash"]',
    f"LABEL {LABEL_KIND}=base",
)
RECIPE_VERSION = 2

SERVER_CONTEXT = Path(__file__).resolve().parent / "payloads" / "sim-server"
FAKES_DIR = SERVER_CONTEXT / "ascend_fakes"  # the fake Ascend tools, shipped as /opt/ascend-sim/fakes


class ImageError(SimError):
    """An image could not be built."""


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def base_recipe_hash() -> str:
    recipe = {
        "v": RECIPE_VERSION,
        "suite": SUITE,
        "variant": "minbase",
        "packages": sorted(BASE_PACKAGES),
        "post": BASE_POST,
        "changes": list(BASE_CHANGES),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def base_tag() -> str:
    return f"{BASE_REPO}:{base_recipe_hash()}"


def apt_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The Debian mirror apt uses for the main suite (deb822 or one-line sources), else deb.debian.org."""
    files = [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*"))]
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and SUITE in suites.group(1).split():
                return uris.group(1).rstrip("/")
        for line in text.splitlines():
            m = re.match(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)\s", line.strip() + " ")
            if m and m.group(2) == SUITE:
                return m.group(1).rstrip("/")
    return DEFAULT_MIRROR


def image_exists(cli: Any, tag: str) -> bool:
    try:
        cli.images.get(tag)
    except ImageNotFound:
        return False
    return True


def _run(cmd: list[str], what: str, fix: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise ImageError(f"{what} failed (exit {proc.returncode}):\n{tail}\nFix: {fix}")


def build_base(cli: Any, *, workdir: Path | None = None) -> str:
    """Build (or reuse) the base image and return its tag."""
    tag = base_tag()
    if image_exists(cli, tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise ImageError(
            "Cannot build the base image: debootstrap is not installed. "
            "Fix: run `python -m ascend_sim.engine ensure` (installs it) "
            "or `apt-get install debootstrap`."
        )
    mirror = apt_mirror()
    started = time.monotonic()
    _say(f"sim images: building {tag} with debootstrap from {mirror} (a few minutes, once)")
    with tempfile.TemporaryDirectory(prefix="ascend-sim-base-", dir=workdir) as tmp:
        rootfs = Path(tmp) / "rootfs"
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                SUITE,
                str(rootfs),
                mirror,
            ],
            "debootstrap",
            f"check that {mirror} is reachable (apt-get update works), then run again.",
        )
        _run(
            ["chroot", str(rootfs), "/bin/sh", "-c", BASE_POST],
            "base image clean-up in the chroot",
            "remove the temporary tree and run again.",
        )
        tar = subprocess.Popen(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE
        )
        if tar.stdout is None:  # Popen with stdout=PIPE always has it; keeps the type checker honest
            raise ImageError("tar of the base tree gave no output stream. Fix: run again.")
        try:
            cli.api.import_image(
                src=tar.stdout,
                repository=BASE_REPO,
                tag=base_recipe_hash(),
                changes=list(BASE_CHANGES),
                stream_src=True,
            )
        except APIError as exc:
            raise ImageError(
                f"docker import of the base image failed: {exc}. Fix: check dockerd's log."
            ) from None
        finally:
            tar.stdout.close()
            tar.wait()
    if not image_exists(cli, tag):
        raise ImageError(f"docker import did not produce {tag}. Fix: check /var/log/ascend-sim-dockerd.log.")
    _say(f"sim images: {tag} ready in {time.monotonic() - started:.0f} s")
    return tag


def _context_files() -> list[tuple[str, Path]]:
    """(path inside the build context, source file) for the server image, in a stable order."""
    if not (SERVER_CONTEXT / "Dockerfile").is_file():
        raise ImageError(
            f"{SERVER_CONTEXT}/Dockerfile is missing. Fix: restore ascend_sim/payloads/sim-server/ from git."
        )

    def wanted(p: Path) -> bool:
        return p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"

    return sorted((str(p.relative_to(SERVER_CONTEXT)), p) for p in SERVER_CONTEXT.rglob("*") if wanted(p))


def server_tag(base: str) -> str:
    """The shared server image: a hash of the base and of payloads/sim-server/ (not of any cluster)."""
    h = hashlib.sha256(f"{base}\0".encode())
    for rel, src in _context_files():
        h.update(rel.encode() + b"\0" + src.read_bytes() + b"\0")
    return f"{SERVER_REPO}:{h.hexdigest()[:12]}"


@contextmanager
def _build_lock() -> Iterator[None]:
    """One image build at a time on this host (flock on payloads/ of the checkout: no lock file left), so
    that two `sim up`s in parallel build a missing image once."""
    fd = os.open(SERVER_CONTEXT.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _build(cli: Any, tag: str, what: str, **kwargs: Any) -> None:
    try:
        cli.images.build(tag=tag, rm=True, forcerm=True, pull=False, network_mode="none", **kwargs)
    except BuildError as exc:
        log = "".join(str(c.get("stream", c.get("error", ""))) for c in exc.build_log)
        tail = "\n".join(log.strip().splitlines()[-8:])
        raise ImageError(
            f"Building {tag} failed: {exc.msg}\n{tail}\nFix: correct {what} and run again."
        ) from None
    except APIError as exc:
        raise ImageError(f"Building {tag} failed: {exc}. Fix: check dockerd's log.") from None


def build_shared_server(cli: Any, base: str) -> tuple[str, bool]:
    """Build (or reuse) the server image every cluster shares; returns (tag, built_now)."""
    tag = server_tag(base)
    with _build_lock():
        if image_exists(cli, tag):
            return tag, False
        with tempfile.TemporaryDirectory(prefix="ascend-sim-ctx-") as tmp:
            ctx = Path(tmp)
            for rel, src in _context_files():
                dst = ctx / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
            _build(
                cli, tag, "ascend_sim/payloads/sim-server/", path=str(ctx), buildargs={"BASE": base},
                labels={LABEL_KIND: "server"},
            )  # fmt: skip
    return tag, True


def build_server(cli: Any, cluster: str, base: str) -> tuple[str, bool]:
    """The cluster's server image: the shared one plus a layer holding only the cluster's label (what
    `sim down` removes; the shared image stays, like the base). Returns (tag, shared image built now)."""
    shared, built = build_shared_server(cli, base)
    tag = f"{shared}-{cluster}"
    if not image_exists(cli, tag):
        dockerfile = f"FROM {shared}\nLABEL {LABEL_CLUSTER}={cluster} {LABEL_KIND}=server\n"
        _build(cli, tag, "ascend_sim/payloads/sim-server/", fileobj=io.BytesIO(dockerfile.encode()))
    return tag, built


# What a serving image needs from the server's own tree: not the engines, keys, state or mounted data.
# Nor what only the server uses (its engine, compilers for the driver's DKMS build, perl, documentation):
# the serving and router images need python3 and its standard library; every byte left out is written
# once per build host and once per server the image is shipped to.
SEED_EXCLUDES = (
    "./proc", "./sys", "./dev", "./run", "./tmp", "./data", "./var/lib/docker", "./var/lib/ascend-sim",
    "./var/log/*", "./etc/ssh/ssh_host_*", "./root/.ssh", "./usr/local/Ascend", "./usr/local/dcmi",
    "./usr/bin/docker*", "./usr/sbin/dockerd", "./usr/bin/containerd*", "./usr/sbin/runc", "./usr/bin/runc",
    "./usr/bin/ctr", "./usr/bin/dnet", "./usr/sbin/ovrouter", "./usr/bin/*lto-dump*", "./usr/lib/gcc",
    "./usr/libexec/gcc", "./usr/share/locale", "./usr/share/doc", "./usr/share/man", "./usr/share/perl",
    "./usr/lib/x86_64-linux-gnu/perl", "./usr/lib/aarch64-linux-gnu/perl", "./var/lib/dkms",
    "./usr/lib/*/libasan*", "./usr/lib/*/libtsan*", "./usr/lib/*/libhwasan*", "./usr/lib/*/liblsan*",
    "./usr/lib/*/libubsan*", f".{REPO_DIR}",
)  # fmt: skip


def seed_inner_base(ctr: Any, tags: list[str]) -> bool:
    """Make the CANN base image(s) of the plan exist in a build server's inner Docker, with no registry: a
    python3 image imported from the server's own tree (bookworm minbase + python3), tagged with every name
    in tags. Returns False when they were all there already."""
    check = " && ".join(f"docker image inspect {t} >/dev/null 2>&1" for t in tags)
    excludes = " ".join(f"--exclude='{e}'" for e in SEED_EXCLUDES)
    imported = f"docker import --change 'CMD [\"/bin/bash\"]' - {tags[0]} >/dev/null"
    script = "; ".join(
        [
            f"if {check}; then exit 3; fi",
            "for i in $(seq 1 150); do docker info >/dev/null 2>&1 && break; sleep 0.2; done",
            " && ".join(
                [
                    f"tar -C / {excludes} -cf - . | {imported}",
                    *(f"docker tag {tags[0]} {t}" for t in tags[1:]),
                ]
            ),
        ]
    )
    res = ctr.exec_run(["sh", "-c", script])
    if res.exit_code == 3:
        return False
    if res.exit_code != 0:
        raise ImageError(
            f"Loading {tags[0]} into {ctr.name}'s Docker failed: {res.output.decode(errors='replace')[-400:]}"
            f" Fix: check the server's dockerd (`docker exec {ctr.name} tail /var/log/docker.log`)."
        )
    return True


def remove_cluster_images(cli: Any, cluster: str) -> list[str]:
    """Remove every image tag labelled with the cluster; returns the removed tags."""
    removed: list[str] = []
    for img in cli.images.list(filters={"label": f"{LABEL_CLUSTER}={cluster}"}):
        for tag in img.tags or [img.id]:
            try:
                cli.images.remove(tag, noprune=False)
                removed.append(tag)
            except ImageNotFound:
                continue
    return removed


def remove_base_images(cli: Any) -> list[str]:
    """`sim down --purge`: remove every cached base and shared server image (all hashes)."""
    removed: list[str] = []
    for img in [*cli.images.list(name=SERVER_REPO), *cli.images.list(name=BASE_REPO)]:
        for tag in img.tags:
            try:
                cli.images.remove(tag)
                removed.append(tag)
            except (ImageNotFound, APIError):
                continue
    return removed


if __name__ == "__main__":  # python -m ascend_sim.images: base + shared server image (CI warm-up)
    from ascend_sim.engine import ensure_engine

    try:
        engine = ensure_engine()
        base_image = build_base(engine)
        print(base_image, build_shared_server(engine, base_image)[0])
    except SimError as exc:
        _say(str(exc))
        sys.exit(1)
