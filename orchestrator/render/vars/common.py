"""What every phase reads: the site's identity and layout version, how Ansible connects, package sources.

The `ansible_*` variables are Ansible's own connection settings (read by Ansible, not by a role)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from orchestrator.planning.model import HostPlan
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.software import PackageSource

INVENTORY_VERSION = 1
"""The layout of the rendered inventory; playbooks/boilerplate.yml refuses any other (bump both together)."""


def package(pkg: PackageSource) -> dict[str, Any]:
    """A package as the staging tasks read it: where it comes from, its file name and checksum."""
    location = pkg.path if pkg.path is not None else str(pkg.url)
    return {
        "version": pkg.version,
        "source": "controller" if pkg.path is not None else "url",
        "location": location,
        "filename": PurePosixPath(
            pkg.path if pkg.path is not None else str(pkg.url.path if pkg.url else "")
        ).name,
        "sha256": pkg.sha256,
    }


def common_vars(spec: SiteSpec, spec_sha256: str) -> dict[str, Any]:
    """group_vars/all.yml: the site, the spec it was rendered from, the layout, the SSH connection."""
    ssh = spec.ssh
    out: dict[str, Any] = {
        "orchestrator_site": spec.site,
        "orchestrator_spec_sha256": spec_sha256,
        "orchestrator_inventory_version": INVENTORY_VERSION,
        "ansible_user": ssh.user,
        "ansible_become": ssh.become or ssh.user != "root",
        "ansible_ssh_host_key_checking": ssh.host_key_checking,
        "ansible_python_interpreter": "auto_silent",
    }
    if ssh.key_file:
        out["ansible_ssh_private_key_file"] = ssh.key_file
    if ssh.known_hosts_file:
        out["ansible_ssh_common_args"] = f"-o UserKnownHostsFile={ssh.known_hosts_file}"
    return out


def common_host_vars(host: HostPlan) -> dict[str, Any]:
    """host_vars/<host>.yml: where Ansible connects."""
    return {"ansible_host": host.address, "ansible_port": host.ssh_port}
