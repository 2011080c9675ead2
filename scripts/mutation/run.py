"""Run mutmut per package and report killed / survived / timeout / no tests / suspicious and the score.

Called by scripts/mutation-test (which installs mutmut). Mutant names are `orchestrator.<package>.<module>.
x_<function>__mutmut_<n>`, so a package is selected with the pattern `orchestrator.<package>.*`. Results live
in mutants/<source path>.meta (JSON: exit code per mutant); the status of an exit code is mutmut's own table.
"""

from __future__ import annotations

import argparse
import hashlib
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


def in_sample(name: str, every: int) -> bool:
    """A stable 1-in-`every` choice by the mutant's name (the same mutants before and after a change)."""
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % every == 0


def results(package: str, every: int = 1) -> dict[str, str]:
    """Status of every mutant of the package (of the sample), by name; empty before the first run."""
    out: dict[str, str] = {}
    for meta in sorted((MUTANTS / "orchestrator" / package).rglob("*.py.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        for name, code in data["exit_code_by_key"].items():
            if in_sample(name, every):
                out[name] = status_by_exit_code[code]
    return out


# mutmut 3.8.1 creates mutants/ (a copy of the sources, tests and also_copy paths, mutants included) at the
# start of `mutmut run`; a sample must be drawn before that, so do the same steps without running tests
_GENERATE = """
import os
from mutmut.__main__ import create_mutants
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths
os.makedirs("mutants", exist_ok=True)
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
create_mutants(2)
"""


def generate() -> None:
    subprocess.run([sys.executable, "-c", _GENERATE], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def make_git_checkout() -> None:
    """mutants/ as a git repository with one empty commit: the tests run in the copy, and one of them
    (tests/unit/history/test_history_db.py) checks that project_version(ROOT) is the commit of the checkout
    ROOT, which it reads only where ROOT/.git exists. Done once; mutmut leaves mutants/.git alone."""
    MUTANTS.mkdir(exist_ok=True)
    if (MUTANTS / ".git").exists():
        return
    git = ["git", "-C", str(MUTANTS), "-c", "user.name=mutmut", "-c", "user.email=mutmut@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    message = "mutmut's copy of the checkout (scripts/mutation/run.py)"
    commit = ["commit", "-q", "--allow-empty", "--no-verify", "--no-gpg-sign", "-m", message]
    subprocess.run([*git, *commit], check=True)


def line(package: str, c: Counts) -> str:
    s = c.statuses
    return (
        f"{package:<11} {c.total:>6} {s['killed']:>7} {s['timeout']:>8} {s['survived']:>9} "
        f"{s['no tests']:>9} {s['suspicious']:>11} {s['not checked']:>12} {c.score:>7.1f}%"
    )


def report(packages: tuple[str, ...], names: bool, every: int) -> None:
    print(
        f"{'package':<11} {'total':>6} {'killed':>7} {'timeout':>8} {'survived':>9} {'no tests':>9} "
        f"{'suspicious':>11} {'not checked':>12} {'score':>8}"
    )
    for package in packages:
        found = results(package, every)
        print(line(package, Counts(Counter(found.values()))))
    sample = f" (a sample: 1 mutant in {every})" if every > 1 else ""
    print(f"score = (killed + timeout) / all mutants{sample}; 'no tests', 'not checked' are not killed")
    if names:
        for package in packages:
            for name, status in sorted(results(package, every).items()):
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


def selection(package: str, survivors: bool, every: int) -> list[str]:
    """The mutant names (or the pattern) one run of the package covers."""
    if survivors:
        return sorted(n for n, s in results(package, every).items() if s in NOT_DEAD)
    if every > 1:
        return sorted(results(package, every))
    return [f"orchestrator.{package}.*"]


def run(packages: tuple[str, ...], survivors: bool, every: int, max_children: int) -> None:
    """One `mutmut run` for every package (mutmut runs the whole test suite once per call before mutating)."""
    make_git_checkout()
    if every > 1 or survivors:
        generate()
    log = MUTANTS / "run.log"
    log.write_text("", encoding="utf-8")
    names = [name for package in packages for name in selection(package, survivors, every)]
    if not names:
        print("nothing to run")
        return
    seconds = mutmut(names, max_children, log)
    # mutants of functions changed since the last run are new ("not checked") and were not selected by name
    fresh = sorted(
        n for package in packages for n, s in results(package, every).items() if s == "not checked"
    )
    if fresh:
        seconds += mutmut(fresh, max_children, log)
    what = "reran the mutants that did not die" if survivors else f"ran {len(names)} mutants (or patterns)"
    print(f"{', '.join(packages)}: {what} in {seconds / 60:.1f} min")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--package", choices=[*PACKAGES, "all"], default="all")
    ap.add_argument("--survivors", action="store_true", help="rerun only the mutants that did not die")
    ap.add_argument("--report", action="store_true", help="print the counts of the last run, run nothing")
    ap.add_argument("--list", action="store_true", help="with the report, name every mutant that did not die")
    ap.add_argument("--fresh", action="store_true", help="delete mutants/ first")
    ap.add_argument("--sample", type=int, default=1, metavar="N", help="only 1 mutant in N (stable choice)")
    ap.add_argument("--max-children", type=int, default=2, help="parallel test processes (default 2)")
    args = ap.parse_args()
    packages = PACKAGES if args.package == "all" else (args.package,)
    if not (args.report or args.list):
        if args.fresh and MUTANTS.exists():
            shutil.rmtree(MUTANTS)
        run(packages, args.survivors, args.sample, args.max_children)
    report(packages, args.list, args.sample)


if __name__ == "__main__":
    main()
