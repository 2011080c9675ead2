"""Every module of ascend.npu documents itself the way Ansible reads it: `ansible-doc` (Ansible's own parser,
not ours) loads DOCUMENTATION, EXAMPLES and RETURN, and the documented options are exactly the options the
module accepts (the literal `argument_spec` of its AnsibleModule call, read from the source)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PATIENCE_S

ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = ROOT / "collections"
MODULES = sorted((COLLECTIONS / "ansible_collections/ascend/npu/plugins/modules").glob("*.py"))
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"


def _argument_spec(source: str) -> dict[str, ast.expr]:
    """The top-level options of the module's AnsibleModule(argument_spec={...}) call."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "AnsibleModule":
            for kw in node.keywords:
                if kw.arg == "argument_spec" and isinstance(kw.value, ast.Dict):
                    return {
                        ast.literal_eval(k): v
                        for k, v in zip(kw.value.keys, kw.value.values, strict=True)
                        if k
                    }
    raise AssertionError("no AnsibleModule(argument_spec={...}) literal")


def test_every_module_file_is_checked() -> None:
    assert {m.stem for m in MODULES} >= {"hccn", "hccn_ping", "hdk_package", "kernel_param", "npu_info"}


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.stem)
def test_ansible_doc_reads_the_module_and_its_options_match_the_argument_spec(module: Path) -> None:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS), "ANSIBLE_NOCOLOR": "1"}
    name = f"ascend.npu.{module.stem}"
    proc = subprocess.run(
        [str(ANSIBLE_DOC), "-t", "module", "--json", name],
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr
    entry = json.loads(proc.stdout)[name]
    doc = entry["doc"]
    assert doc["short_description"] and doc["description"]
    assert entry["examples"] and entry["return"] is not None
    documented = set(doc.get("options") or {})
    assert documented == set(_argument_spec(module.read_text(encoding="utf-8")))
