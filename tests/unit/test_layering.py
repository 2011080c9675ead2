"""The front half imports in one direction: spec <- planning <- validation <- pipeline <- cli, render beside
validation (it reads the plan, never the checks). Read from the source with `ast`, so an import inside a
function counts as much as one at the top of a module."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

# layer -> the other layers of orchestrator/ it may import (a layer is a package or a top-level module)
ALLOWED: dict[str, frozenset[str]] = {
    "catalog": frozenset(),
    "spec": frozenset({"catalog"}),
    "planning": frozenset({"spec", "catalog"}),
    "validation": frozenset({"spec", "planning", "catalog"}),
    "render": frozenset({"spec", "planning", "catalog"}),
    "pipeline": frozenset({"spec", "planning", "validation", "catalog"}),
}
KNOWN: set[tuple[str, str]] = set()  # (file, layer) edges against the direction: none


def _layer(rel: Path) -> str:
    return rel.parts[0].removesuffix(".py")


def _imported(source: str, package: str) -> set[str]:
    """The modules of `package` a source file imports, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {m for m in found if m == package or m.startswith(package + ".")}


def back_edges(root: Path, package: str = "orchestrator") -> list[str]:
    """Every import in a layer of ALLOWED that names a layer it may not import ("file -> module")."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root / package)
        layer = _layer(rel)
        if layer not in ALLOWED:
            continue  # cli and the packages around the pipeline (runner, sim, doctor ...) sit above it
        for module in sorted(_imported(path.read_text(encoding="utf-8"), package)):
            parts = module.split(".")
            target = parts[1] if len(parts) > 1 else package
            if target == layer or target in ALLOWED[layer] or (rel.as_posix(), target) in KNOWN:
                continue
            out.append(f"{package}/{rel.as_posix()} -> {module}")
    return out


def test_the_front_half_imports_in_one_direction() -> None:
    assert back_edges(ROOT) == []


def test_every_layer_exists() -> None:
    """A renamed package would make its rule vacuous."""
    for layer in ALLOWED:
        assert (ROOT / "orchestrator" / layer).is_dir() or (ROOT / "orchestrator" / f"{layer}.py").is_file()


def test_a_back_edge_is_reported(tmp_path: Path) -> None:
    pkg = tmp_path / "orchestrator"
    for rel, text in {
        "spec/site.py": "from orchestrator.catalog import chips\n",
        "planning/build.py": "from orchestrator.spec.site import SiteSpec\n",
        "render/inventory.py": "def f():\n    from orchestrator.validation import ValidationResult\n",
        "validation/rules.py": "import orchestrator.cli.app\n",
        "pipeline.py": "from orchestrator.render import render\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, encoding="utf-8")
    assert back_edges(tmp_path) == [
        "orchestrator/pipeline.py -> orchestrator.render",
        "orchestrator/render/inventory.py -> orchestrator.validation",
        "orchestrator/validation/rules.py -> orchestrator.cli.app",
    ]
