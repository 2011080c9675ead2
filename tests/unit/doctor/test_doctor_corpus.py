"""The doctor on its corpus of real failing logs (benchmarks/doctor-corpus/, kept apart from the other test
data): never a wrong cause, and at least the named ratio measured when the rules were last grown.
benchmarks/bench_doctor_corpus.py prints the same counts as a table."""

from __future__ import annotations

from orchestrator.doctor.corpus import NONE_KNOWN, PARTS, Outcome, load_manifest, score
from orchestrator.doctor.logscan import read_log
from orchestrator.doctor.rules import BY_ID
from tests.helpers import ROOT

CORPUS = ROOT / "benchmarks" / "doctor-corpus"
ENTRIES = load_manifest(CORPUS / "manifest.yaml")

# measured on the held-out part when the rules were written from the train part (benchmarks/README.md)
HELDOUT_NAMED_FLOOR = 7
HELDOUT_NAMED_RATIO_FLOOR = 1.0


def _report(part: str) -> str:
    s = score(ENTRIES, part)
    return "\n".join(
        f"{r.outcome.value}: {r.entry.file.name} cause={r.entry.cause} diagnosis={r.diagnosis}"
        for r in s.results
        if r.outcome not in (Outcome.named, Outcome.abstained)
    )


def test_heldout_logs_get_no_wrong_cause_and_keep_the_measured_named_ratio() -> None:
    s = score(ENTRIES, "heldout")
    assert s.logs >= 12
    assert s.count(Outcome.wrong) == 0, _report("heldout")
    assert s.count(Outcome.named) >= HELDOUT_NAMED_FLOOR, _report("heldout")
    assert s.named_ratio >= HELDOUT_NAMED_RATIO_FLOOR, _report("heldout")


def test_train_logs_are_all_named() -> None:
    s = score(ENTRIES, "train")
    assert s.count(Outcome.wrong) == 0, _report("train")
    assert s.count(Outcome.named) == s.with_cause == s.logs, _report("train")


def test_manifest_is_consistent_with_the_files_and_the_rules() -> None:
    seen: dict[str, str] = {}
    for e in ENTRIES:
        lines = read_log(e.file)
        assert lines and lines[0] == f"# source: {e.source}", e.file
        assert e.source.startswith("https://github.com/"), e.file
        assert e.cause == NONE_KNOWN or e.cause in BY_ID, (e.file, e.cause)
        assert all(r in BY_ID for r in e.also_right), e.file
        assert e.file.name not in seen, (e.file, seen.get(e.file.name))
        seen[e.file.name] = e.part
    for part in PARTS:
        listed = {e.file.name for e in ENTRIES if e.part == part}
        assert listed == {p.name for p in (CORPUS / part).glob("*.log")}, part
    # a thread is in one part only: the held-out logs are not the ones the rules were written from
    by_part = {part: {e.source for e in ENTRIES if e.part == part} for part in PARTS}
    assert not by_part["train"] & by_part["heldout"]


def test_heldout_threads_are_not_cited_by_the_rules_they_are_diagnosed_with() -> None:
    """A held-out log the rules were written from would not measure anything: no held-out thread is among
    the sources of the rule its cause names."""
    for e in ENTRIES:
        if e.part == "heldout" and e.cause != NONE_KNOWN:
            assert e.source not in BY_ID[e.cause].sources, (e.file, e.cause)
