"""The invalid-spec corpus: every file in tests/data/invalid/ has exactly one deliberate mistake.

Each file starts with comment lines that state what validation must report:

    # expect-path: serving.replicas[0].parallelism     (orchestrator.spec.findings.format_path)
    # expect-line: 41                                  (1-based line in that file)
    # expect-message: tp x pp x dp = 4 x 1 x 4 = 16    (substring of the message)
    # expect-fix: dp: 2                                (optional; substring of the fix)
    # expect-absent: sk-live-...                       (optional; a secret that must never be printed)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.cli.app import main
from orchestrator.pipeline import ValidationResult, validate_file
from orchestrator.spec.findings import Finding, format_finding, format_path
from tests.helpers import PATIENCE_S

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "invalid"
FILES = sorted(CORPUS.glob("*.yaml"))
MIN_FILES = 40

_HEADER = re.compile(r"^# expect-(?P<key>[a-z]+): (?P<value>.+?)\s*$")
_KEYS = frozenset({"path", "line", "message", "fix", "absent"})
_NAME = re.compile(r"^(?P<number>[0-9]{2})-[a-z0-9]+(-[a-z0-9]+)*\.yaml$")


@dataclass(frozen=True)
class Expectation:
    path: str
    line: int
    message: str
    fix: str | None
    absent: str | None

    def describe(self) -> str:
        fix = f", fix containing {self.fix!r}" if self.fix else ""
        return f"error at {self.path} (line {self.line}) with message containing {self.message!r}{fix}"


def read_expectation(path: Path) -> Expectation:
    """The expect-* lines of the leading comment block (the rest of the file is the spec)."""
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        m = _HEADER.match(line)
        if m is None:
            continue
        key = m["key"]
        assert key in _KEYS, f"{path.name}: unknown header 'expect-{key}'"
        assert key not in values, f"{path.name}: 'expect-{key}' given twice"
        values[key] = m["value"]
    missing = {"path", "line", "message"} - set(values)
    assert not missing, f"{path.name}: header lacks expect-{', expect-'.join(sorted(missing))}"
    assert values["line"].isdigit(), f"{path.name}: expect-line must be a line number"
    return Expectation(
        path=values["path"],
        line=int(values["line"]),
        message=values["message"],
        fix=values.get("fix"),
        absent=values.get("absent"),
    )


def _matches(finding: Finding, exp: Expectation) -> bool:
    return (
        format_path(finding.path) == exp.path
        and finding.position is not None
        and finding.position.line == exp.line
        and exp.message in finding.message
        and (exp.fix is None or (finding.fix is not None and exp.fix in finding.fix))
    )


def _report(result: ValidationResult, name: str) -> str:
    return "\n".join(format_finding(f, name) for f in result.findings) or "(no findings)"


@pytest.fixture(scope="module")
def results() -> dict[Path, ValidationResult]:
    return {path: validate_file(path) for path in FILES}


def test_corpus_has_enough_well_named_files() -> None:
    assert len(FILES) >= MIN_FILES, f"only {len(FILES)} corpus files in {CORPUS}"
    numbers = []
    for path in FILES:
        m = _NAME.match(path.name)
        assert m is not None, f"{path.name}: name it NN-short-name.yaml"
        numbers.append(m["number"])
    assert len(numbers) == len(set(numbers)), "two corpus files share a number"


def test_no_corpus_file_is_valid(results: dict[Path, ValidationResult]) -> None:
    valid = [path.name for path, result in results.items() if result.ok or not result.errors]
    assert valid == [], "these corpus files pass validation (their mistake went unnoticed)"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_file_reports_its_mistake(path: Path, results: dict[Path, ValidationResult]) -> None:
    exp = read_expectation(path)
    result = results[path]
    report = _report(result, path.name)
    assert not result.ok, f"{path.name} validated:\n{report}"
    assert result.plan is None
    matching = [f for f in result.findings if _matches(f, exp)]
    assert matching, f"{path.name}: expected {exp.describe()}, got:\n{report}"
    assert all(f.severity == "error" for f in matching), f"{path.name}: reported as a warning:\n{report}"
    assert all(f.position is not None and f.position.column >= 1 for f in result.findings if f.path)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_file_line_points_into_the_file(path: Path) -> None:
    exp = read_expectation(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert 1 <= exp.line <= len(lines), f"{path.name}: expect-line {exp.line} is outside the file"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_file_reports_each_problem_once(path: Path, results: dict[Path, ValidationResult]) -> None:
    texts = [format_finding(f, path.name) for f in results[path].findings]
    repeated = sorted({t for t in texts if texts.count(t) > 1})
    assert repeated == [], f"{path.name}: the same finding is printed more than once"


SECRET_FILES = [p for p in FILES if read_expectation(p).absent]


def test_corpus_covers_secrets() -> None:
    assert len(SECRET_FILES) >= 3


@pytest.mark.parametrize("path", SECRET_FILES, ids=[p.stem for p in SECRET_FILES])
def test_secret_is_never_echoed(path: Path, results: dict[Path, ValidationResult]) -> None:
    secret = read_expectation(path).absent
    assert secret is not None and secret in path.read_text(encoding="utf-8")
    result = results[path]
    assert result.findings, f"{path.name}: nothing was reported, so the secret was accepted"
    for f in result.findings:
        assert secret not in format_finding(f, path.name)
        assert secret not in repr(f)


def _run_cli(path: Path) -> subprocess.CompletedProcess[str]:
    """`python -m orchestrator validate FILE` in its own process."""
    env = {k: v for k, v in os.environ.items() if k not in ("ORCHESTRATOR_DEBUG", "FORCE_COLOR")}
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "250"
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "validate", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )


def _in_process(path: Path, capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """The same command through the CLI's entry point (`orchestrator.cli.app.main`) in this process: the
    whole command (parsing, validation, output, exit code) without a Python start per file."""
    with pytest.raises(SystemExit) as stop:
        main(["validate", str(path)])
    out = capsys.readouterr()
    code = stop.value.code
    return subprocess.CompletedProcess(
        ["validate", str(path)], code if isinstance(code, int) else 1, out.out, out.err
    )


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What _run_cli gives its process, for the in-process runs: no colour, 250 columns, the checkout."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("ORCHESTRATOR_DEBUG", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(ROOT)


@pytest.mark.usefixtures("cli_env")
def test_one_corpus_file_in_its_own_process_reads_as_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    """The in-process runs below stand for `python -m orchestrator validate`: same exit code, same output."""
    for path in (FILES[0], *SECRET_FILES[:1]):
        here = _in_process(path, capsys)
        there = _run_cli(path)
        assert (here.returncode, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr)


@pytest.mark.usefixtures("cli_env")
def test_cli_rejects_every_corpus_file(capsys: pytest.CaptureFixture[str]) -> None:
    runs = {path: _in_process(path, capsys) for path in FILES}
    problems: list[str] = []
    for path, proc in runs.items():
        exp = read_expectation(path)
        out = proc.stdout + proc.stderr
        if proc.returncode != 2:
            problems.append(f"{path.name}: exit {proc.returncode}, expected 2\n{out}")
        if "Traceback" in out or "internal error" in out:
            problems.append(f"{path.name}: crashed\n{out}")
        finding_lines = re.findall(rf"^{re.escape(str(path))}:\d+:\d+: error: \S.*?: ", proc.stderr, re.M)
        if not finding_lines:
            problems.append(f"{path.name}: no 'FILE:LINE:COL: error: PATH:' line\n{out}")
        wanted = rf"^{re.escape(str(path))}:{exp.line}:\d+: error: {re.escape(exp.path)}: "
        if not re.search(wanted, proc.stderr, re.M):
            problems.append(f"{path.name}: no error line for {exp.path} at line {exp.line}\n{out}")
        if "INVALID" not in proc.stderr:
            problems.append(f"{path.name}: no INVALID summary\n{out}")
        if exp.absent and exp.absent in out:
            problems.append(f"{path.name}: the secret was printed")
    assert problems == [], "\n\n".join(problems)
