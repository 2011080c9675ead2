"""Test helpers: load an example site as data, change it, validate it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from orchestrator.validation import ValidationResult, validate_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "inventories"


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
    """`python -m orchestrator ARGS` in a subprocess, as a user runs it (exit code, stdout, stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )
