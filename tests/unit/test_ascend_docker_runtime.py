"""The optional Ascend Docker Runtime: what render gives role container_runtime on the NPU servers, and the
simulator's fake .run package (installs the files ascend-host.md "Ascend Docker Runtime (MindCluster)" names,
refuses a tampered archive before anything is extracted)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ascend_sim.docker_runtime_package import build_docker_runtime_package
from ascend_sim.packages import sha256_of
from orchestrator.render.inventory import inventory_files
from tests.helpers import validate_data

RUNTIME = "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"  # ascend-host.md install path
SHA = "ab" * 32


def _files(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = validate_data(data)
    assert result.plan is not None and result.spec is not None, [f.message for f in result.errors]
    return inventory_files(result.spec, result.plan, "0" * 64)


def test_absent_by_default(single: dict[str, Any]) -> None:
    files = _files(single)
    assert files["group_vars/npu.yml"]["container_runtime_ascend"] is None
    assert "container_runtime_daemon_config" not in files["group_vars/npu.yml"]


def test_registered_and_default_when_asked(single: dict[str, Any]) -> None:
    single["software"]["ascend_docker_runtime"] = {
        "version": "7.0.RC1",
        "path": "/srv/pkgs/Ascend-docker-runtime_7.0.RC1_linux-aarch64.run",
        "sha256": SHA,
    }
    files = _files(single)
    npu, base = files["group_vars/npu.yml"], files["group_vars/all.yml"]["container_runtime_daemon_config"]
    adr = npu["container_runtime_ascend"]
    assert adr["package"] == {
        "version": "7.0.RC1",
        "source": "controller",
        "location": "/srv/pkgs/Ascend-docker-runtime_7.0.RC1_linux-aarch64.run",
        "filename": "Ascend-docker-runtime_7.0.RC1_linux-aarch64.run",
        "sha256": SHA,
    }
    assert adr["default_runtime"] is True
    daemon = npu["container_runtime_daemon_config"]
    assert daemon == {
        **base,
        "runtimes": {"ascend": {"path": RUNTIME, "runtimeArgs": []}},
        "default-runtime": "ascend",
    }
    single["software"]["ascend_docker_runtime"]["default_runtime"] = False
    daemon = _files(single)["group_vars/npu.yml"]["container_runtime_daemon_config"]
    assert "default-runtime" not in daemon and daemon["runtimes"]["ascend"]["path"] == RUNTIME


def test_a_package_without_a_checksum_is_refused(single: dict[str, Any]) -> None:
    single["software"]["ascend_docker_runtime"] = {"version": "7.0.RC1", "path": "/srv/x.run"}
    errors = validate_data(single).errors
    assert any(f.path[:3] == ("software", "ascend_docker_runtime", "sha256") for f in errors)


def _run(pkg: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASCEND_SIM_ROOT": str(root)}
    return subprocess.run(  # Y: the answer to its EULA question (test_ascend_docker_runtime_eula.py)
        ["bash", str(pkg), *args],
        env=env,
        input="Y\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_fake_package_installs_the_docker_scene(tmp_path: Path) -> None:
    pkg = build_docker_runtime_package("7.0.RC1", tmp_path / "pkgs")
    assert pkg.name == "Ascend-docker-runtime_7.0.RC1_linux-aarch64.run"
    assert sha256_of(pkg) == sha256_of(build_docker_runtime_package("7.0.RC1", tmp_path / "again"))
    root = tmp_path / "root"
    assert _run(pkg, root, "--install").returncode == 1  # a scene is required
    done = _run(pkg, root, "--install", "--install-scene=docker")
    assert done.returncode == 0 and "install success" in done.stdout, done.stderr
    assert os.access(root / RUNTIME.lstrip("/"), os.X_OK)
    assert "/usr/local/Ascend/driver/lib64" in (root / "etc/ascend-docker-runtime.d/base.list").read_text()


def test_a_tampered_package_runs_nothing(tmp_path: Path) -> None:
    pkg = build_docker_runtime_package("7.0.RC1", tmp_path / "pkgs")
    data = bytearray(pkg.read_bytes())
    data[-1] ^= 0xFF
    pkg.write_bytes(bytes(data))
    root = tmp_path / "root"
    res = _run(pkg, root, "--install", "--install-scene=docker")
    assert res.returncode == 2 and "SHA256" in res.stderr
    assert not (root / "usr").exists() and not (root / "etc").exists()
