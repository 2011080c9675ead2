"""Prometheus's own `promtool` for the monitoring tests (alert rules, scrape config, dashboard queries).

It comes from Debian's `prometheus` package (/usr/bin/promtool), which scripts/bootstrap-test installs when it
is missing. Without it the tests fail with that fix; they never skip, so a CI without promtool cannot pass.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import PATIENCE_S

DEBIAN_PATH = Path("/usr/bin/promtool")


def promtool() -> str:
    """The promtool binary on PATH, else Debian's; fails the calling test when there is none."""
    found = shutil.which("promtool") or (str(DEBIAN_PATH) if DEBIAN_PATH.is_file() else None)
    if found is None:
        pytest.fail(
            "promtool was not found on PATH nor at /usr/bin/promtool, so the alert rules, the Prometheus "
            "config and the dashboard queries cannot be checked. Fix: run ./scripts/bootstrap-test as root "
            "(it installs Debian's `prometheus` package, which ships promtool), or `apt-get install "
            "--no-install-recommends prometheus`, or put a promtool 2.42+ on PATH.",
            pytrace=False,
        )
    return found


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`promtool ARGS` with its output captured (stdout and stderr together in .stdout)."""
    return subprocess.run(
        [promtool(), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )


def prometheus() -> str:
    """The Prometheus server binary of the same package (on PATH, beside promtool, or Debian's)."""
    beside = Path(promtool()).with_name("prometheus")
    found = shutil.which("prometheus") or (str(beside) if beside.is_file() else None)
    if found is None:
        pytest.fail(
            "the prometheus binary was not found on PATH nor beside promtool. Fix: run "
            "./scripts/bootstrap-test as root (Debian's `prometheus` package ships both /usr/bin/prometheus "
            "and /usr/bin/promtool).",
            pytrace=False,
        )
    return found
