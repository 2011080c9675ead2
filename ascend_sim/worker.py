"""`orchestrator sim worker SERVER`: make a simulated server an ansible-runner worker (a regional controller
that `orchestrator apply --worker` hands its jobs to, orchestrator/runner/remote.py).

A real worker gets ansible-core, ansible-runner and the `ansible` package's collections from the execution
environment (ee/) or from pip. The simulated servers have no network index to install from, so this copies
them from the controller's own Python environment (same Debian 12 and CPython 3.11 ABI): the installed
distributions of ansible-core and ansible-runner with everything they require (importlib.metadata), and the
collections the roles call, under /opt/ascend-runner/lib, with `ansible-runner` and `ansible-playbook` in
/usr/local/bin. Like any worker it also needs what the inventory names on the controller: the SSH key and
known_hosts of the cluster (and its API key file), copied to the same paths. The Ansible content itself is
not installed: each job brings it (remote.py).
"""

from __future__ import annotations

import io
import re
import tarfile
from importlib import metadata
from pathlib import Path

from ascend_sim.engine import SimError
from ascend_sim.faults import Server
from ascend_sim.state import cluster_dir

LIB = "/opt/ascend-runner/lib"
TOP = ("ansible-core", "ansible-runner")
COLLECTIONS = ("ansible/posix", "community/docker", "community/general")
SCRIPTS = {
    "ansible-runner": 'exec /usr/bin/python3 -m ansible_runner "$@"',
    "ansible-playbook": "exec /usr/bin/python3 -c 'import sys; from ansible.cli.playbook import main; "
    'sys.argv[0] = "ansible-playbook"; sys.exit(main())\' "$@"',
}


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """The distributions `dist` requires unconditionally (no extras; environment markers of this Python)."""
    from packaging.requirements import Requirement

    names = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            names.append(req.name)
    return names


def distributions(top: tuple[str, ...] = TOP) -> list[metadata.Distribution]:
    """`top` and everything they require, as installed here."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(top)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        dist = metadata.distribution(name)
        seen[name] = dist
        todo += _requirement_names(dist)
    return [seen[k] for k in sorted(seen)]


def _site_files(dists: list[metadata.Distribution]) -> list[tuple[Path, str]]:
    """(file on the controller, path under LIB) of every file the distributions installed in site-packages."""
    out = []
    for dist in dists:
        base = Path(str(dist.locate_file("")))
        for f in dist.files or []:
            if ".." in f.parts or "__pycache__" in f.parts:
                continue  # console scripts (../../bin) and byte code: the worker's own wrappers and Python
            out.append((base / f, str(f)))
    return out


def payload() -> bytes:
    """A tar (for Docker's put_archive at /) of the libraries, the collections and the wrapper scripts."""
    dists = distributions()
    site = Path(str(metadata.distribution("ansible-core").locate_file("")))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for src, rel in _site_files(dists):
            tar.add(src, arcname=f"{LIB}/{rel}", recursive=False)
        for coll in COLLECTIONS:
            tar.add(site / "ansible_collections" / coll, arcname=f"{LIB}/ansible_collections/{coll}",
                    filter=lambda t: None if "__pycache__" in t.name else t)  # fmt: skip
        for name, line in SCRIPTS.items():
            text = "#!/bin/sh\n# ansible-runner worker of the simulator (orchestrator sim worker)\n"
            text += f"export PYTHONPATH={LIB}\n{line}\n"
            info = tarfile.TarInfo(f"usr/local/bin/{name}")
            info.mode, info.size = 0o755, len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buf.getvalue()


def _controller_files(root: Path, cluster: str) -> bytes:
    """The cluster's SSH key, known_hosts and API key at the same absolute paths as on the controller."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("id_ed25519", "known_hosts", "api-key"):
            path = (cluster_dir(root, cluster) / name).resolve()
            if path.is_file():
                tar.add(path, arcname=str(path).lstrip("/"))
    return buf.getvalue()


def install(root: Path, cluster: str, server: str) -> str:
    """Make `server` a worker; the line to print."""
    srv = Server(root, cluster, server)
    for data in (payload(), _controller_files(root, cluster)):
        if not srv.ctr.put_archive("/", data):
            raise SimError(f"Copying the worker's files into {server} failed. Fix: run the command again.")
    version = srv.sh("ansible-runner", "--version").strip()
    playbook = next(x for x in srv.sh("ansible-playbook", "--version").splitlines() if "[core" in x)
    return (
        f"{server} ({srv.info.address}) is an ansible-runner worker: ansible-runner {version}, {playbook}. "
        f"Use it: orchestrator apply {cluster} --worker root@{srv.info.address}"
    )
