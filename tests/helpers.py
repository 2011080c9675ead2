"""Test helpers: load an example site as data, change it, validate it."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from orchestrator.pipeline import ValidationResult, validate_text

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


CLOSED_WEBHOOK = "http://127.0.0.1:9/hook"
"""A webhook URL nothing listens on (port 9, discard): a delivery to it fails at once and only warns."""


def copy_ready_site(tmp_path: Path, name: str) -> Path:
    """Copy the example site into tmp_path/project and make this machine a controller that holds what the
    site needs before a run may start (orchestrator/validation/controller.py): its ssh.key_file and a
    controller weights folder exist (dummies inside the copy), and the API key and registry password
    references point at files in the copy. The drift webhook stays env:DRIFT_WEBHOOK_URL: tests that run
    drift set it (CLOSED_WEBHOOK). Returns the project root."""
    root = tmp_path / "project"
    site_dir = root / "inventories" / name
    shutil.copytree(EXAMPLES / name, site_dir)
    spec = site_dir / "site.yaml"
    text = spec.read_text(encoding="utf-8")
    key = site_dir / "ssh-key"
    key.write_text("not a real key\n")
    key.chmod(0o600)
    text = re.sub(r"(?m)^(\s*key_file:) \S+$", rf"\1 {key}", text)
    weights = site_dir / "weights"  # a controller-side weights folder (source type controller)
    weights.mkdir()
    text = re.sub(r"(?m)^(\s*location:) /\S+$", rf"\1 {weights}", text)
    for ref, value in (("env:VLLM_API_KEY", "test-api-key"), ("env:REGISTRY_PASSWORD", "test-password")):
        secret = site_dir / ref[4:].lower()
        secret.write_text(value + "\n")
        secret.chmod(0o600)
        text = text.replace(ref, f"file:{secret}")
    spec.write_text(text, encoding="utf-8")
    return root


def cli_options(tokens: list[str]) -> dict[str, str | None]:
    """A command line's `--flag [value]` tokens as a mapping (None: a flag without a value), as the tutorial
    tests read upstream `vllm serve` lines and rendered argv."""
    out: dict[str, str | None] = {}
    i = 0
    while i < len(tokens):
        flag = tokens[i]
        assert flag.startswith("--"), tokens
        if i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            out[flag], i = tokens[i + 1], i + 2
        else:
            out[flag], i = None, i + 1
    return out
