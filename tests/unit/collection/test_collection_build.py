"""The ascend.npu collection as an operator gets it: `ansible-galaxy collection build` of the checkout's
folder, installed offline from the tarball into a folder of its own, used with nothing pointing at the
checkout. It carries every tracked file of the collection (roles and playbooks included, git's index is the
reference), it is versioned with the product, ansible-core as pinned meets its requires_ansible, ansible-doc
documents every module and every role entry point from the installed copy, and its site playbook by FQCN
(`ansible-playbook ascend.npu.site`) lists the same plays and tasks as the checkout's playbooks/site.yml.
The integration test converging the simulated cluster with it is in tests/integration/sim/
test_status_served.py."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from tests.galaxy import BIN, COLLECTION, ansible_cli, build, clean_env, install
from tests.helpers import PATIENCE_S, ROOT

INVENTORY = ROOT / "inventories" / "a2-pair-r1-w8a8" / "hosts.yml"


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def installed(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tarball, tmp_path_factory.mktemp("installed"))


def ansible(tool: str, args: list[str], installed: Path, cwd: Path) -> str:
    """An Ansible CLI that sees the installed copy only (and the `ansible` package's bundled collections)."""
    paths = {"ANSIBLE_COLLECTIONS_PATH": str(installed.parents[2]), "ANSIBLE_ROLES_PATH": str(cwd)}
    proc = ansible_cli(tool, args, cwd, **paths)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_the_tarball_holds_every_tracked_file_of_the_collection_and_nothing_else(tarball: Path) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--", "."], cwd=COLLECTION, capture_output=True, check=True
    ).stdout.decode()
    expected = {p for p in tracked.split("\0") if p} - {"galaxy.yml", "ruff.toml"}  # MANIFEST.json has it
    with tarfile.open(tarball) as tar:
        shipped = {m.name for m in tar.getmembers() if m.isfile()}
    assert shipped - {"MANIFEST.json", "FILES.json"} == expected
    assert {"playbooks/site.yml", "roles/vllm_serve/tasks/main.yml", "meta/runtime.yml"} <= shipped


def test_versioned_with_the_product_and_the_pinned_ansible_core_meets_requires_ansible(
    installed: Path,
) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    manifest = json.loads((installed / "MANIFEST.json").read_text(encoding="utf-8"))["collection_info"]
    assert manifest["version"] == project["version"]
    runtime = yaml.safe_load((installed / "meta" / "runtime.yml").read_text(encoding="utf-8"))
    assert SpecifierSet(runtime["requires_ansible"]).contains(importlib.metadata.version("ansible-core"))


def test_ansible_doc_documents_every_module_and_role_from_the_installed_copy(
    installed: Path, tmp_path: Path
) -> None:
    modules = json.loads(
        ansible("ansible-doc", ["-t", "module", "-l", "ascend.npu", "--json"], installed, tmp_path)
    )
    assert set(modules) == {f"ascend.npu.{p.stem}" for p in (COLLECTION / "plugins" / "modules").glob("*.py")}
    assert all(text and text != "UNDOCUMENTED" for text in modules.values()), modules
    roles = json.loads(
        ansible("ansible-doc", ["-t", "role", "-l", "ascend.npu", "--json"], installed, tmp_path)
    )
    assert set(roles) == {f"ascend.npu.{p.name}" for p in (COLLECTION / "roles").iterdir() if p.is_dir()}
    for name, role in roles.items():  # every entry point (meta/argument_specs.yml) says what it does
        assert role["entry_points"] and all(role["entry_points"].values()), (name, role)


def _tasks(listing: str) -> list[str]:
    """`--list-tasks` lines without the path line; collection roles print as ascend.npu.ROLE."""
    lines = [
        line.strip() for line in listing.splitlines() if line.strip() and not line.startswith("playbook:")
    ]
    return [re.sub(r"\bascend\.npu\.(?=\w+ : )", "", line) for line in lines]


def test_the_site_playbook_by_fqcn_lists_the_checkouts_plays_and_tasks(
    installed: Path, tmp_path: Path
) -> None:
    args = ["-i", str(INVENTORY), "--list-tasks"]
    by_fqcn = ansible("ansible-playbook", ["ascend.npu.site", *args], installed, tmp_path)
    assert f"playbook: {installed}/playbooks/site.yml" in by_fqcn  # the installed copy, not the checkout's
    checkout = subprocess.run(
        [str(BIN / "ansible-playbook"), "playbooks/site.yml", *args],
        cwd=ROOT,  # the checkout's ansible.cfg: roles_path = roles
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=True,
    ).stdout
    assert _tasks(by_fqcn) == _tasks(checkout)
    assert len(_tasks(by_fqcn)) > 200
    assert "ascend.npu.preflight : Preflight | NPU count matches the spec" in by_fqcn  # the collection's role
    assert "\n      preflight : Preflight | NPU count matches the spec" in checkout  # roles_path's
