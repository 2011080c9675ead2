"""ansible-test sanity on a copy of the collection: the tests that run offline (the others install their
requirements into a virtualenv bootstrapped from ci-files.testing.ansible.com, which is not reachable here;
ansible-doc, validate-modules and yamllint are covered by ansible-doc, test_module_docs.py and yamllint).
replace-urlopen is left out on purpose: module_utils/http.py keeps urllib (its docstring says why)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.galaxy import COLLECTION, ansible_cli

OFFLINE = (
    "action-plugin-docs", "compile", "empty-init", "ignores", "line-endings", "no-assert", "no-get-exception",
    "no-illegal-filenames", "no-smart-quotes", "shebang", "symlinks",
    "use-argspec-type-path", "use-compat-six",
)  # fmt: skip


def test_the_offline_sanity_tests_pass(tmp_path: Path) -> None:
    copy = tmp_path / "ansible_collections" / "ascend" / "npu"  # the layout ansible-test requires
    shutil.copytree(COLLECTION, copy, ignore=shutil.ignore_patterns("__pycache__", ".ruff_cache", "tests"))
    args = ["sanity", "--local", "--python", "3.11", *(f"--test={t}" for t in OFFLINE)]
    proc = ansible_cli("ansible-test", args, copy)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for name in OFFLINE:
        assert f'Running sanity test "{name}"' in proc.stdout + proc.stderr, name
