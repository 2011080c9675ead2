"""Test helpers: load an example site as data, change it, validate it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from orchestrator.validation import ValidationResult, validate_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "inventories"

PATIENCE_S = 600.0
"""How long a test waits for something that is bound to happen (a subprocess to finish, a server to come up,
a fault file to be read). CI runs the unit tests at nice 19 beside the integration tests, so they may get a
small fraction of the CPU; a wait returns as soon as the thing happens, so only a hang waits this long."""


@contextmanager
def cpu_seconds_at_most(limit: float, what: str = "the work") -> Iterator[None]:
    """Fail when the block used more than `limit` seconds of this process's CPU time (all its threads).

    CPU time, not wall time: the machine is shared (CI runs the unit tests at nice 19 beside the integration
    tests), and other processes stretch the wall clock, not the CPU time of our work. Checked when the block
    ends normally (an exception inside it propagates unchanged)."""
    start = time.process_time()
    yield
    used = time.process_time() - start
    assert used < limit, f"{what} took {used:.2f} s of CPU (budget {limit:g} s)"


def load_example(name: str) -> dict[str, Any]:
    yaml = YAML(typ="safe")
    data = yaml.load((EXAMPLES / name / "site.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def to_yaml(data: dict[str, Any]) -> str:
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def validate_data(data: dict[str, Any]) -> ValidationResult:
    return validate_text(to_yaml(data), "site.yaml")


def run_cli(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m orchestrator ARGS` in a subprocess, as a user runs it (exit code, stdout, stderr); output
    wrapped to 80 columns as in a pipe or a CI log (unless `env` sets COLUMNS), whatever the terminal the
    tests run in."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
    )
