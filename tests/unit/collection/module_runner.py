"""Run the ascend.npu modules the way Ansible runs them on a host (a Python process reading its arguments
from a JSON file) against a simulated Ascend server under a temp ASCEND_SIM_ROOT (tests/unit/sim)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import PATIENCE_S
from tests.unit.sim.ascend_fake_helpers import REPO, env

COLLECTIONS = REPO / "collections"
MODULES = COLLECTIONS / "ansible_collections" / "ascend" / "npu" / "plugins" / "modules"


def run_module(
    root: Path, name: str, args: dict[str, Any], *, check_mode: bool = False, **extra_env: str
) -> dict[str, Any]:
    """The module's JSON result; `failed` is set when it called fail_json. The module runs with this
    test's interpreter (Ansible's own Python, as on a host with ansible-core's requirements); the fake tools
    it calls run with `python3` from PATH (tests.unit.sim.ascend_fake_helpers.env)."""
    argfile = root.parent / f"{name}-args.json"
    argfile.write_text(
        json.dumps({"ANSIBLE_MODULE_ARGS": {"root": str(root), **args, "_ansible_check_mode": check_mode}}),
        encoding="utf-8",
    )
    environ = env(root, **extra_env)
    environ["PYTHONPATH"] = str(COLLECTIONS)
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
        detail = f"{proc.stdout}\n{proc.stderr}"
        raise AssertionError(f"{name} printed no JSON (rc {proc.returncode}):\n{detail}") from None
    return result


def ran(root: Path) -> bool:
    """Whether any HDK installer ran on the simulated host: every run of the fake installers logs its start
    to /var/log/ascend_seclog/ascend_install.log (install_session.start, like the real package's log())."""
    return (root / "var/log/ascend_seclog/ascend_install.log").exists()
