"""The drivers phase's decisions as the roles write them (npu_driver tasks/assess.yml and main.yml,
npu_firmware tasks/verify.yml), evaluated by Ansible's own templating against what ascend.npu.npu_info
reads from a simulated host (the fake packages, npu-smi and version.info files under a temp root):

- a firmware flashed at the factory at the spec's version leaves no firmware version.info: the host is
  current, nothing is installed, verification passes;
- versions written as Huawei's portal writes them (25.3.RC1) match what the host prints (25.3.rc1), and the
  inventory render gives the host's spelling."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ascend_sim.packages import build_package
from orchestrator.render.inventory import inventory_files
from tests.conftest import load_example
from tests.helpers import validate_data
from tests.unit.collection.module_runner import run_module
from tests.unit.sim.ascend_fake_helpers import HW_910B4, host, run_package

ROLES = Path(__file__).resolve().parents[3] / "roles"
FULL = ("--nox11", "--full", "--quiet", "--install-for-all")
DRIVER, FIRMWARE, FACTORY = "25.3.rc1", "7.8.0.6.201", "7.7.0.1.231"


def _task(role: str, file: str, name: str) -> dict[str, Any]:
    tasks = yaml.safe_load((ROLES / role / "tasks" / file).read_text())
    task: dict[str, Any] = next(t for t in tasks if t["name"] == name)
    return task


def _templar(variables: dict[str, Any]) -> Templar:
    return Templar(loader=DataLoader(), variables=variables)


def _render(value: Any, variables: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return _templar(variables).template(trust_as_template(value))
    return value


READS = (  # the three npu_info tasks the decisions read (role, file, task name)
    ("npu_driver", "assess.yml", "Driver | read the installed and active versions"),
    ("npu_driver", "main.yml", "Driver | read the NPU state"),
    ("npu_firmware", "verify.yml", "Firmware | read the installed and active versions"),
)


def _npu_info(root: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """npu_info with the version arguments the roles' tasks give it (the same in all three; run once)."""
    given = []
    for role, file, name in READS:
        args = _task(role, file, name)["ascend.npu.npu_info"] or {}
        given.append({k: _render(v, spec) for k, v in args.items() if k.endswith("_version")})
    assert all(g == given[0] for g in given), given
    res = run_module(root, "npu_info", {**given[0], "containers": False})
    assert res.get("failed") is None, res.get("msg")
    return res


def _decisions(root: Path, driver: str, firmware: str) -> dict[str, Any]:
    spec = {"npu_driver_package": {"version": driver}, "npu_firmware_package": {"version": firmware}}
    res = _npu_info(root, spec)
    join = _task("npu_driver", "assess.yml", "Driver | join the rollout or not")
    key = join["ansible.builtin.group_by"]["key"]
    decide = _task("npu_driver", "main.yml", "Driver | decide")["ansible.builtin.set_fact"]
    verify = _task("npu_firmware", "verify.yml", "Firmware | versions are the spec's and compatible")
    registered = {"_npu_driver_assessed": res, "_npu_driver_state": res, "_npu_firmware_final": res}
    task_vars = {  # the tasks' own vars, templated lazily as Ansible does
        k: trust_as_template(v) if isinstance(v, str) else v
        for task in (join, verify)
        for k, v in (task.get("vars") or {}).items()
    }
    variables = {**spec, **registered, **task_vars}
    that = verify["ansible.builtin.assert"]["that"]
    return {
        "group": _render(key, variables).strip(),
        "decide": {k: _render(v, variables) for k, v in decide.items()},
        "verify": [bool(_templar(variables).evaluate_conditional(trust_as_template(c))) for c in that],
    }


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pkgs")
    return {
        "driver": build_package("driver", "910b", DRIVER, out),
        "firmware": build_package("firmware", "910b", FIRMWARE, out),
    }


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def test_factory_firmware_at_the_spec_version_is_current(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "r"
    host(root, dict(HW_910B4, firmware_version=FIRMWARE))  # flashed at the factory: no version.info
    assert run_package(root, pkgs["driver"], *FULL).returncode == 0
    assert not (root / "usr/local/Ascend/firmware/version.info").exists()
    got = _decisions(root, DRIVER, FIRMWARE)
    assert got["group"] == "npu_driver_current"
    decide = got["decide"]
    assert not _truthy(decide["_npu_driver_change"]) and not _truthy(decide["_npu_driver_fw_differs"])
    assert all(got["verify"]), got["verify"]


def test_older_factory_firmware_is_pending(pkgs: dict[str, Path], tmp_path: Path) -> None:
    """The same host with the older factory firmware the simulator usually ships: the firmware differs."""
    root = tmp_path / "r"
    host(root, dict(HW_910B4, firmware_version=FACTORY))
    assert run_package(root, pkgs["driver"], *FULL).returncode == 0
    got = _decisions(root, DRIVER, FIRMWARE)
    assert got["group"] == "npu_driver_pending" and _truthy(got["decide"]["_npu_driver_fw_differs"])
    assert not all(got["verify"])


def test_rc_versions_as_the_portal_writes_them(pkgs: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "r"
    host(root, dict(HW_910B4, firmware_version=FACTORY))
    assert run_package(root, pkgs["driver"], *FULL).returncode == 0
    assert run_package(root, pkgs["firmware"], "--nox11", "--full", "--quiet").returncode == 0
    board = (root / "usr/local/Ascend/driver/version.info").read_text()
    assert re.search(r"(?m)^Version=25\.3\.rc1$", board)  # what the host prints
    for driver in ("25.3.RC1", "25.3.rc1"):  # an inventory written by hand, and the rendered one
        got = _decisions(root, driver, FIRMWARE)
        assert got["group"] == "npu_driver_current", driver
        assert not _truthy(got["decide"]["_npu_driver_change"]), driver
        assert all(got["verify"]), (driver, got["verify"])


def test_render_gives_the_hosts_spelling() -> None:
    data = copy.deepcopy(load_example("a2-single-distill"))
    data["software"]["driver"]["version"] = "25.3.RC1"
    data["software"]["driver"]["path"] = "/srv/ascend/Ascend-hdk-910b-npu-driver_25.3.rc1_linux-aarch64.run"
    result = validate_data(data)
    assert result.plan is not None and result.spec is not None, [f.message for f in result.errors]
    npu = inventory_files(result.spec, result.plan, "0" * 64)["group_vars/npu.yml"]
    assert npu["npu_driver_package"]["version"] == DRIVER
    assert npu["npu_firmware_package"]["version"] == FIRMWARE
