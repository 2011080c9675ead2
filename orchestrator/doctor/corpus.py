"""Scoring the log diagnosis on a labelled corpus of real failing logs (benchmarks/doctor-corpus/).

A manifest lists, per part (`train`: the logs the rules were written from, `heldout`: logs no rule was
written from), each log file with the cause its public thread confirms: a rule id, or NONE_KNOWN when the
thread confirms no cause or one no rule covers (then "no known cause" is the right answer). Each diagnosis
is one of:

- named: the rule the thread confirms;
- missed: no known cause, for a log whose cause a rule covers;
- abstained: no known cause, for a NONE_KNOWN log (the right answer);
- symptom: a rule the manifest lists in `also_right` (it names the symptom, not the cause);
- wrong: any other rule - a confident wrong cause, which costs an operator more than "no known cause".

`named ratio` = named / logs with a rule-covered cause; `wrong ratio` = wrong / all logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from orchestrator.doctor.logscan import Scan, scan_file

NONE_KNOWN = "none-known"
PARTS = ("train", "heldout")


class Outcome(StrEnum):
    named = "named"
    missed = "missed"
    abstained = "abstained"
    symptom = "symptom"
    wrong = "wrong"


@dataclass(frozen=True)
class Entry:
    """One labelled log of the manifest."""

    part: str
    file: Path
    source: str
    cause: str
    also_right: tuple[str, ...] = ()


@dataclass(frozen=True)
class Result:
    """The doctor's diagnosis of one entry and how it compares with the confirmed cause."""

    entry: Entry
    scan: Scan
    outcome: Outcome

    @property
    def diagnosis(self) -> str:
        return NONE_KNOWN if self.scan.match is None else self.scan.match.rule.id


@dataclass(frozen=True)
class Score:
    """Counts of one part of the corpus."""

    part: str
    results: tuple[Result, ...]

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome is outcome)

    @property
    def logs(self) -> int:
        return len(self.results)

    @property
    def with_cause(self) -> int:
        """Logs whose confirmed cause a rule covers."""
        return sum(1 for r in self.results if r.entry.cause != NONE_KNOWN)

    @property
    def named_ratio(self) -> float:
        return self.count(Outcome.named) / self.with_cause if self.with_cause else 1.0

    @property
    def wrong_ratio(self) -> float:
        return self.count(Outcome.wrong) / self.logs if self.logs else 0.0


def load_manifest(path: Path) -> list[Entry]:
    """The entries of a manifest (YAML: part -> list of {file, source, cause, also_right?}); files are
    relative to `<manifest dir>/<part>/`."""
    data: Mapping[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    entries = []
    for part in PARTS:
        for row in data.get(part) or []:
            entries.append(
                Entry(
                    part=part,
                    file=path.parent / part / str(row["file"]),
                    source=str(row["source"]),
                    cause=str(row["cause"]),
                    also_right=tuple(str(r) for r in row.get("also_right") or ()),
                )
            )
    return entries


def judge(entry: Entry, scan: Scan) -> Outcome:
    """How a diagnosis compares with the entry's confirmed cause."""
    found = None if scan.match is None else scan.match.rule.id
    if found is None:
        return Outcome.abstained if entry.cause == NONE_KNOWN else Outcome.missed
    if found == entry.cause:
        return Outcome.named
    if found in entry.also_right:
        return Outcome.symptom
    return Outcome.wrong


def score(entries: Sequence[Entry], part: str) -> Score:
    """Diagnose every log of one part and judge it."""
    results = []
    for entry in entries:
        if entry.part != part:
            continue
        scan = scan_file(entry.file)
        results.append(Result(entry, scan, judge(entry, scan)))
    return Score(part, tuple(results))
