"""The simulated servers' apt source holds what the roles install: every package an apt/package task of a role
names (read from the roles' tasks and defaults, and the Debian row of the container runtime's package table)
is in the base image or in its flat repository (ascend_sim/images.py). A role that starts to install
another package fails here, not in the middle of an integration run that cannot download it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ascend_sim import images
from orchestrator.catalog.container_engine import CONTAINER_RUNTIME_PACKAGES

ROLES = Path(__file__).resolve().parents[3] / "roles"
MODULES = ("ansible.builtin.apt", "ansible.builtin.package")
VAR = re.compile(r"^\{\{\s*(\w+)\s*\}\}$")
# Package lists built from facts and filters: the driver's tools (all in the base image) and its DKMS
# prerequisites with the running kernel's headers (the simulator's specs say kernel_headers: provided).
COMPUTED = {"npu_driver"}


def tasks(node: Any) -> list[dict[str, Any]]:
    """Every task of a task file, blocks and rescues included."""
    found: list[dict[str, Any]] = []
    for task in node or []:
        found.append(task)
        for key in ("block", "rescue", "always"):
            found += tasks(task.get(key))
    return found


def named_packages() -> dict[str, set[str]]:
    """{role: package names} of every apt/package task; a role whose names are computed maps to {"?"}."""
    out: dict[str, set[str]] = {}
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        role = path.parts[-3]
        file = ROLES / role / "defaults" / "main.yml"
        defaults = yaml.safe_load(file.read_text(encoding="utf-8")) if file.is_file() else {}
        for task in tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
            module = next((m for m in MODULES if m in task), None)
            if module is None:
                continue
            name = task[module]["name"]
            names = name if isinstance(name, list) else [name]
            for item in names:
                var = VAR.match(str(item))
                if var and var.group(1) == "container_runtime_packages":
                    value: Any = list(CONTAINER_RUNTIME_PACKAGES["debian"])
                elif var and var.group(1) in (defaults or {}):
                    value = defaults[var.group(1)]
                elif "{{" in str(item):
                    value = ["?"]
                else:
                    value = [item]
                out.setdefault(role, set()).update(value if isinstance(value, list) else [value])
    return out


def test_every_package_a_role_installs_is_in_the_image_or_its_repository() -> None:
    found = named_packages()
    computed = {role for role, names in found.items() if "?" in names}
    assert computed == COMPUTED, computed
    wanted = {name for role, names in found.items() if role not in COMPUTED for name in names}
    assert {"python3-docker", "prometheus-node-exporter", "prometheus", "unzip", "zstd", "rsync"} <= wanted
    missing = wanted - set(images.BASE_PACKAGES) - set(images.REPO_PACKAGES)
    assert missing == set(), f"add {sorted(missing)} to REPO_PACKAGES in ascend_sim/images.py"


def test_the_repository_is_the_servers_only_apt_source_and_stays_out_of_seeded_images() -> None:
    post = images.BASE_POST
    assert f"apt-get install --download-only -y -q {' '.join(images.REPO_PACKAGES)}" in post
    assert f"echo 'deb [trusted=yes] file:{images.REPO_DIR} ./' > /etc/apt/sources.list" in post
    assert post.index("apt-get clean") < post.index("--download-only") < post.index("dpkg-scanpackages")
    assert "dpkg-dev" in images.BASE_PACKAGES  # dpkg-scanpackages writes the repository's index
    assert f".{images.REPO_DIR}" in images.SEED_EXCLUDES
