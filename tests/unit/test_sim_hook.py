"""The product reaches the simulator (ascend_sim) only through `orchestrator sim`'s lazy hook
(orchestrator/cli/sim_hook.py): no product module imports it, and without the simulator or its Docker SDK
(the `sim` extra) `orchestrator sim ...` prints one sentence with the fix, while every other command works."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.helpers import PATIENCE_S, ROOT

HOOK = ROOT / "orchestrator" / "cli" / "sim_hook.py"


def _imports(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_product_module_imports_the_simulator() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "orchestrator").rglob("*.py"))
        if any(n == "ascend_sim" or n.startswith("ascend_sim.") for n in _imports(str(p.relative_to(ROOT))))
    ]
    assert offenders == []


def _cli_without(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`orchestrator ARGS` in a Python where `module` cannot be imported (as if it were not installed)."""
    code = (
        f"import sys; sys.modules[{module!r}] = None; sys.argv = ['orchestrator', *sys.argv[1:]]; "
        "from orchestrator.cli.app import main; main()"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )


@pytest.mark.parametrize("module", ["docker", "ascend_sim"])
@pytest.mark.parametrize("args", [["sim", "up", "--nodes", "2"], ["sim", "--help"], ["sim"]])
def test_sim_without_the_simulator_prints_the_fix(module: str, args: list[str]) -> None:
    run = _cli_without(module, *args)
    assert run.returncode == 1, run.stderr
    assert run.stdout == ""
    assert run.stderr.splitlines() == [
        f"The simulator is not installed (no Python module {module!r}). Fix: pip install "
        "'ascend-orchestrator[sim]' (in a checkout: ./scripts/bootstrap sim)."
    ]


def test_the_rest_of_the_cli_runs_without_the_docker_sdk() -> None:
    listed = _cli_without("docker", "--help")
    assert listed.returncode == 0, listed.stderr
    assert "sim" in listed.stdout.split()
    assert "Traceback" not in listed.stderr
    valid = _cli_without("docker", "validate", "inventories/a2-pair-r1-w8a8/site.yaml")
    assert valid.returncode == 0, valid.stdout + valid.stderr
