"""Run the CLI as a user would and measure it (exit code, output, wall and CPU time, peak RSS).

Used by the hostile-input tests: the time budget is 1 s of CPU on top of the CLI's start-up (importing the
CLI, measured on a one-line spec), so a busy shared machine does not make the tests flaky;
benchmarks/README.md has absolute wall times.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.pipeline import ValidationResult
from orchestrator.spec.findings import Finding, format_finding
from tests.helpers import ROOT

BUDGET_S = 1.0  # per hostile case, on top of the CLI's start-up time
MAX_RSS_MB = 200


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float  # wall
    cpu: float  # user + system
    rss_mb: float


# Runs the CLI's main() and, at exit, reports the process's peak RSS (VmHWM: this process image only; the
# rusage of a child also counts the parent's memory it was forked from).
_MEASURED = """
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\n@@peak-rss-kb {kb}\\n")
atexit.register(_peak)
sys.argv = ["orchestrator", *sys.argv[1:]]
from orchestrator.cli.app import main
main()
"""


def cli(*args: str) -> Run:
    """Run the CLI: wall time, CPU time (user + system, from wait4) and peak RSS of that process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _MEASURED, *args], cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stderr, _, peak = err.read().rpartition("\n@@peak-rss-kb ")
        cpu = usage.ru_utime + usage.ru_stime
        code = os.waitstatus_to_exitcode(status)
        return Run(code, out.read(), stderr, seconds, cpu, int(peak) / 1024)


def startup_cpu(folder: Path) -> float:
    """The CLI's own CPU cost on this machine: validating a one-line invalid spec (best of two)."""
    spec = folder / "site.yaml"
    spec.write_text("site: [\n", encoding="utf-8")
    return min(cli("validate", str(spec)).cpu for _ in range(2))


def assert_refused(run: Run, startup: float, where: str, *needles: str) -> str:
    """Exit 2, no traceback, one located error with a fix, in time and memory; returns the error line."""
    out = run.stdout + run.stderr
    assert run.code == 2, out
    assert "Traceback" not in out and "internal error" not in out, out
    assert "INVALID: " in run.stderr
    assert re.search(rf"^{re.escape(where)}: error: ", run.stderr, re.M), (
        f"no line starting {where!r}:\n{out}"
    )
    assert "\n    fix: " in run.stderr, out
    for needle in needles:
        assert needle in run.stderr, f"{needle!r} not in:\n{out}"
    # CPU time, not wall time: other processes on a shared machine stretch the wall clock, not our CPU time
    assert run.cpu - startup < BUDGET_S, (
        f"{run.cpu:.2f} s CPU, {run.seconds:.2f} s wall (start-up {startup:.2f})"
    )
    assert run.rss_mb < MAX_RSS_MB, f"{run.rss_mb:.0f} MB"
    return run.stderr


def only_error(result: ValidationResult) -> Finding:
    assert not result.ok and len(result.errors) == 1, [format_finding(f, "s") for f in result.findings]
    return result.errors[0]
