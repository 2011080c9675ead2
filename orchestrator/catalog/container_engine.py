"""The distribution's own Docker engine and Python Docker SDK (the SDK is what community.docker modules
use), by spec os.distro.

Sources: packages.ubuntu.com/jammy/docker.io + python3-docker (universe); packages.debian.org/bookworm/
docker.io + python3-docker; openEuler 22.03/24.03 "everything" repo: docker (docker-engine, Provides:
docker) + python3-docker. kylin: inferred from openEuler (V10 SP).
"""

from __future__ import annotations

CONTAINER_RUNTIME_PACKAGES: dict[str, tuple[str, ...]] = {
    "ubuntu": ("docker.io", "python3-docker"),
    "debian": ("docker.io", "python3-docker"),
    "openeuler": ("docker", "python3-docker"),
    "kylin": ("docker", "python3-docker"),
}
