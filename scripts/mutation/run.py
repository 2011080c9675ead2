"""Run mutmut per package and report killed / survived / timeout / no tests / suspicious and the score.

Called by scripts/mutation-test (which installs mutmut). Mutant names are `orchestrator.<package>.<module>.
x_<function>__mutmut_<n>`, so a package is selected with the pattern `orchestrator.<package>.*`. Results live
in mutants/<source path>.meta (JSON: exit code per mutant); the status of an exit code is mutmut's own table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parents[2]
MUTANTS = ROOT / "mutants"
PACKAGES = ("planning", "validation")
# what a rerun must look at again: everything that did not die (or was never run)
NOT_DEAD = {"survived", "no tests", "suspicious", "not checked", "segfault", "check was interrupted by user"}


@dataclass(frozen=True)
class Counts:
    statuses: Counter[str]

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    @property
    def killed(self) -> int:
        return self.statuses["killed"] + self.statuses["timeout"] + self.statuses["caught by type check"]

    @property
    def score(self) -> float:
        tested = self.total - self.statuses["skipped"]
        return 100.0 * self.killed / tested if tested else 0.0


def results(package: str) -> dict[str, str]:
    """Status of every mutant of the package, by mutant name (empty before the first run)."""
    out: dict[str, str] = {}
    for meta in sorted((MUTANTS / "orchestrator" / package).rglob("*.py.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        for name, code in data["exit_code_by_key"].items():
            out[name] = status_by_exit_code[code]
    return out


def line(package: str, c: Counts) -> str:
    s = c.statuses
    return (
        f"{package:<11} {c.total:>6} {s['killed']:>7} {s['timeout']:>8} {s['survived']:>9} "
        f"{s['no tests']:>9} {s['suspicious']:>11} {s['not checked']:>12} {c.score:>7.1f}%"
    )


def report(packages: tuple[str, ...], names: bool) -> None:
    print(
        f"{'package':<11} {'total':>6} {'killed':>7} {'timeout':>8} {'survived':>9} {'no tests':>9} "
        f"{'suspicious':>11} {'not checked':>12} {'score':>8}"
    )
    for package in packages:
        found = results(package)
        print(line(package, Counts(Counter(found.values()))))
    print("score = (killed + timeout) / all mutants; 'no tests' and 'not checked' count as not killed")
    if names:
        for package in packages:
            for name, status in sorted(results(package).items()):
                if status in NOT_DEAD:
                    print(f"  {status:<11} {name}")


def mutmut(selection: list[str], max_children: int, log: Path) -> float:
    """One `mutmut run` (its progress output goes to the log); returns the wall time in seconds."""
    start = time.monotonic()
    with log.open("a", encoding="utf-8") as out:
        cmd = [str(ROOT / ".venv" / "bin" / "mutmut"), "run", "--max-children", str(max_children), *selection]
        rc = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0:
        sys.exit(f"mutmut run failed (exit {rc}); see the end of {log}")
    return time.monotonic() - start


def run_package(package: str, survivors: bool, max_children: int) -> None:
    MUTANTS.mkdir(exist_ok=True)
    log = MUTANTS / f"run-{package}.log"
    log.write_text("", encoding="utf-8")
    if survivors and results(package):
        selection = sorted(n for n, s in results(package).items() if s in NOT_DEAD)
        if not selection:
            print(f"{package}: nothing left to rerun")
            return
    else:
        selection = [f"orchestrator.{package}.*"]
    seconds = mutmut(selection, max_children, log)
    # mutants of functions changed since the last run are new ("not checked") and were not selected by name
    fresh = sorted(n for n, s in results(package).items() if s == "not checked")
    if fresh:
        seconds += mutmut(fresh, max_children, log)
    what = f"reran {len(selection)}" if survivors else "ran all"
    print(f"{package}: {what} mutants in {seconds / 60:.1f} min")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--package", choices=[*PACKAGES, "all"], default="all")
    ap.add_argument("--survivors", action="store_true", help="rerun only the mutants that did not die")
    ap.add_argument("--report", action="store_true", help="print the counts of the last run, run nothing")
    ap.add_argument("--list", action="store_true", help="with the report, name every mutant that did not die")
    ap.add_argument("--fresh", action="store_true", help="delete mutants/ first")
    ap.add_argument("--max-children", type=int, default=2, help="parallel test processes (default 2)")
    args = ap.parse_args()
    packages = PACKAGES if args.package == "all" else (args.package,)
    if not (args.report or args.list):
        if args.fresh and MUTANTS.exists():
            shutil.rmtree(MUTANTS)
        for package in packages:
            run_package(package, args.survivors, args.max_children)
    report(packages, args.list)


if __name__ == "__main__":
    main()
