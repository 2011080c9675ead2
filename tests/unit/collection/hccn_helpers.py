"""Run ascend.npu.hccn / hccn_ping the way Ansible runs a module on a host (a Python process reading its
arguments from a JSON file), against the simulator's fake hccn_tool under a temp ASCEND_SIM_ROOT."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import PATIENCE_S
from tests.unit.sim.ascend_fake_helpers import FAKES, HW_910B4, PYTHON, REPO, driver_loaded, env, tool

COLLECTIONS = REPO / "collections"
MODULES = COLLECTIONS / "ansible_collections" / "ascend" / "npu" / "plugins" / "modules"
MASK = "255.255.255.0"


def devices() -> list[dict[str, Any]]:
    """The 8 NICs in 10.0.0.0/24 from .10, gateway and netdetect .1 (an A2 single-subnet plan)."""
    gw = "10.0.0.1"
    return [
        {"index": i, "address": f"10.0.0.{10 + i}", "netmask": MASK, "gateway": gw, "netdetect": gw}
        for i in range(8)
    ]


def booted(tmp_path: Path) -> Path:
    """A server whose driver is installed and whose devices came up (the boot applied /etc/hccn.conf)."""
    root = tmp_path / "root"
    driver_loaded(root, HW_910B4, "25.5.1")
    assert tool(root, "simboot.py", "on-boot").returncode == 0
    return root


def configured(tmp_path: Path) -> Path:
    root = booted(tmp_path)
    res = run_module(root, "hccn", {"devices": devices(), "tls": False})
    assert res.get("failed") is None and res["changed"], res
    return root


def live(root: Path, dev: int, *what: str) -> list[str]:
    return tool(root, "hccn_tool.py", "-i", str(dev), *what, "-g").stdout.splitlines()


def hccn_tool(root: Path) -> Path:
    """An executable hccn_tool for the simulated host at root (the fake, run by this interpreter)."""
    path = root.parent / f"{root.name}-bin" / "hccn_tool"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'#!/bin/sh\nexec {PYTHON} -S {FAKES / "hccn_tool.py"} "$@"\n', encoding="utf-8")
        path.chmod(0o755)
    return path


def run_module(
    root: Path,
    name: str,
    args: dict[str, Any],
    *,
    check: bool = False,
    diff: bool = False,
    tool: Path | None = None,
    site: Path | None = None,
) -> dict[str, Any]:
    """The module's JSON result (`failed` set when it called fail_json). site: a directory put first on the
    module's PYTHONPATH (a sitecustomize.py there runs in the module's process before the module)."""
    argfile = root.parent / f"{root.name}-{name}-args.json"
    extra = {"_ansible_check_mode": check, "_ansible_diff": diff}
    module_args: dict[str, Any] = {"hccn_tool": str(tool or hccn_tool(root)), **args, **extra}
    if name == "hccn":
        module_args.setdefault("conf_path", str(root / "etc/hccn.conf"))
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}), encoding="utf-8")
    environ = env(root)
    environ["PYTHONPATH"] = os.pathsep.join([*([str(site)] if site else []), str(COLLECTIONS)])
    proc = subprocess.run(
        [sys.executable, str(MODULES / f"{name}.py"), str(argfile)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=PATIENCE_S,
        check=False,
    )
    try:
        result: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(
            f"{name} printed no JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        ) from None
    return result


def snapshot(root: Path) -> dict[str, str]:
    """Every file under the simulated root (its live NIC state, /etc/hccn.conf, the fabric) by content; the
    empty lock files the fake creates to read the fabric are not state."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".lock"
    }
