"""The execution environment (ee/execution-environment.yml): `ansible-builder create` writes its build
context offline; the context pins ansible-core, ansible-runner and the Python interpreter as pyproject.toml
does, carries the orchestrator package's source, and its galaxy requirements install the ascend.npu
collection offline into a folder from which ansible-doc documents the inventory plugin and a module. The image
itself is not built here (no registry)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from bindep.depends import Depends
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.helpers import ROOT

BIN = Path(sys.executable).parent
DEFINITION = ROOT / "ee" / "execution-environment.yml"


def run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    proc = subprocess.run(argv, cwd=cwd, env={**full, **env}, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ee") / "context"
    run([str(BIN / "ansible-builder"), "create", "-f", str(DEFINITION), "-c", str(out)], ROOT)
    return out


def build_file(context: Path) -> str:
    (found,) = [p for p in (context / "Containerfile", context / "Dockerfile") if p.is_file()]
    return found.read_text(encoding="utf-8")


def arg(text: str, name: str) -> str:
    m = re.search(rf'^ARG {name}="([^"]*)"$', text, re.M)
    assert m, name
    return m.group(1)


def test_ansible_core_runner_and_python_as_pyproject_pins_them(context: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {Requirement(d).name: Requirement(d).specifier for d in project["dependencies"]}
    text = build_file(context)
    refs = {Requirement(r).name: Requirement(r).specifier for r in arg(text, "ANSIBLE_INSTALL_REFS").split()}
    assert refs == {"ansible-core": pins["ansible-core"], "ansible-runner": pins["ansible-runner"]}
    version = re.fullmatch(r"python(\d+\.\d+)", arg(text, "PYPKG"))
    assert version and SpecifierSet(project["requires-python"]).contains(version.group(1) + ".0")
    assert arg(text, "PYCMD") == f"/usr/bin/python{version.group(1)}"


def test_the_orchestrator_source_goes_in_and_is_installed_in_the_final_stage(context: Path) -> None:
    src = context / "_build" / "src"
    assert (src / "pyproject.toml").read_bytes() == (ROOT / "pyproject.toml").read_bytes()
    assert (src / "orchestrator" / "pipeline.py").is_file()
    assert (src / "orchestrator" / "catalog" / "data").is_dir()  # package data the spec needs
    final = build_file(context).split("FROM base AS final", 1)[1]
    assert "COPY _build/src /tmp/ascend-orchestrator" in final
    assert "pip install --no-cache-dir /tmp/ascend-orchestrator" in final


def test_the_system_packages_are_the_controllers(context: Path) -> None:
    rules = Depends((context / "_build" / "bindep.txt").read_text(encoding="utf-8"))
    names = {rule[0] for rule in rules.active_rules(["platform:rpm", "platform:centos"])}
    assert {"openssh-clients", "rsync"} <= names


def test_the_galaxy_requirements_install_the_collection_offline(context: Path, tmp_path: Path) -> None:
    build = context / "_build"
    installed = tmp_path / "installed"
    galaxy_install = ["collection", "install", "-r", "requirements.yml", "-p", str(installed)]
    run([str(BIN / "ansible-galaxy"), *galaxy_install], build)
    npu = installed / "ansible_collections" / "ascend" / "npu"
    manifest = json.loads((npu / "MANIFEST.json").read_text(encoding="utf-8"))["collection_info"]
    galaxy = (ROOT / "collections/ansible_collections/ascend/npu/galaxy.yml").read_text(encoding="utf-8")
    assert (manifest["namespace"], manifest["name"]) == ("ascend", "npu")
    assert f"\nversion: {manifest['version']}\n" in galaxy
    # documented from the installed copy, outside the checkout (its ansible.cfg would find the checkout's)
    for kind, name in (("inventory", "ascend.npu.site"), ("module", "ascend.npu.vllm_gate")):
        argv = [str(BIN / "ansible-doc"), "-t", kind, name, "--json"]
        doc = run(argv, tmp_path, ANSIBLE_COLLECTIONS_PATH=str(installed))
        (entry,) = json.loads(doc.stdout).values()
        assert entry["doc"]["filename"].startswith(str(npu)), entry["doc"]["filename"]
