"""scripts/test_budget.py: the steps' wall and CPU seconds, and per-module seconds read from the junit XML
pytest itself writes (a real report, not one written by hand)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import ROOT


def budget() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_budget_script", ROOT / "scripts" / "test_budget.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_modules_sums_pytest_junit_per_module(tmp_path: Path) -> None:
    pkg = tmp_path / "suite"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "test_one.py").write_text(
        "import time\ndef test_a():\n    time.sleep(0.2)\ndef test_b():\n    pass\n"
    )
    (pkg / "test_two.py").write_text("def test_c():\n    assert 0\n")
    junit = tmp_path / "unit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", "suite"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    found = budget().modules(junit)
    assert set(found) == {"test_one", "test_two"}, found
    seconds, tests, bad = found["test_one"]
    assert tests == 2 and bad == 0 and seconds >= 0.2
    assert found["test_two"][1:] == (1, 1)


def test_report_prints_steps_totals_and_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = budget()
    monkeypatch.setattr(mod, "REPORTS", tmp_path)
    monkeypatch.setattr(mod, "STEPS", tmp_path / "steps.tsv")
    hz = mod.os.sysconf("SC_CLK_TCK")
    rows = [("start", 1000.0, 0), ("ruff", 1010.0, 5 * hz), ("pytest integration", 2210.0, 2005 * hz)]
    (tmp_path / "steps.tsv").write_text("".join(f"{n}\t{t}\t{b}\t{b * 3}\n" for n, t, b in rows))
    assert mod.report() == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split()[-2:] for line in out.splitlines() if line[:1].isalpha()}
    assert lines["ruff"] == ["10", "5"] and lines["total"] == ["1210", "2005"], out
    assert "wall 1210 s of the 1800 s goal (within the goal" in out, out
    mod.mark("next")
    assert (tmp_path / "steps.tsv").read_text().splitlines()[-1].startswith("next\t")


def test_report_sums_the_goldens_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = budget()
    monkeypatch.setattr(mod, "REPORTS", tmp_path)
    monkeypatch.setattr(mod, "STEPS", tmp_path / "steps.tsv")
    (tmp_path / "steps.tsv").write_text("start\t1000.0\t0\t0\nend\t1100.0\t0\t0\n")
    recs = [("mx", "converge", 300.0), ("mx", "restore", 20.0), ("mx", "restore", 30.0)]
    (tmp_path / "goldens.jsonl").write_text(
        "".join(f'{{"golden": "{k}", "step": "{s}", "seconds": {t}}}\n' for k, s, t in recs)
    )
    assert mod.report() == 0
    out = capsys.readouterr().out.splitlines()
    head = out.index("== goldens: converged once, restored per module (wall s)")
    rows = [line.split() for line in out[head + 1 :]]
    assert rows == [
        ["mx", "converge", "1", "x", "300", "s", "=", "300", "s"],
        ["mx", "restore", "2", "x", "25", "s", "=", "50", "s"],
    ], out
