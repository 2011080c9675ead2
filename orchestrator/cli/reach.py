"""For each host Ansible could not reach: the ssh command that reproduces the attempt (user, key, port,
address and the known_hosts option from the rendered inventory), so that an operator sees the real error
(refused, timed out, host key, permission denied) in one paste."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def ssh_command(inventory_dir: Path, host: str) -> str:
    """`ssh -i KEY -p PORT [-o ...] USER@ADDRESS true`, as the rendered inventory connects to host."""
    base = _read(inventory_dir / "group_vars" / "all.yml")
    mine = {**base, **_read(inventory_dir / "host_vars" / f"{host}.yml")}
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
    if mine.get("ansible_ssh_private_key_file"):
        argv += ["-i", str(mine["ansible_ssh_private_key_file"])]
    if mine.get("ansible_port"):
        argv += ["-p", str(mine["ansible_port"])]
    if mine.get("ansible_ssh_common_args"):
        argv += shlex.split(str(mine["ansible_ssh_common_args"]))
    address = mine.get("ansible_host") or host
    user = mine.get("ansible_user")
    argv.append(f"{user}@{address}" if user else str(address))
    argv.append("true")
    # "~" must stay unquoted for the shell to expand it
    return " ".join(a if a.startswith("~/") and shlex.quote(a[2:]) == a[2:] else shlex.quote(a) for a in argv)


def reach_lines(inventory_dir: Path, hosts: Iterable[str]) -> list[str]:
    """One line per unreachable host: what to run to see why."""
    return [f"{h}: unreachable; to see why, run: {ssh_command(inventory_dir, h)}" for h in sorted(set(hosts))]
