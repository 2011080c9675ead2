"""Run `orchestrator doctor --log`'s diagnosis over the doctor corpus (real failing logs from public threads,
benchmarks/doctor-corpus/) and print, for the train and the held-out part separately, how many logs got the
cause their thread confirms (named), no known cause (missed / abstained), a symptom rule, or a WRONG cause.

Run:  .venv/bin/python benchmarks/bench_doctor_corpus.py [--verbose] [--json] [--strict]

The rules were written from `train` only; `heldout` measures what they do on logs they were not written
from. Goals: named ratio >= 0.80 and 0 wrong on the held-out part; --strict exits 1 when
either is missed. Not a timed benchmark and not a pytest test (tests/unit/doctor/test_doctor_corpus.py
holds the held-out floor in CI).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.doctor.corpus import PARTS, Outcome, Score, load_manifest, score  # noqa: E402

MANIFEST = ROOT / "benchmarks" / "doctor-corpus" / "manifest.yaml"
NAMED_GOAL = 0.80
COLUMNS = (
    "logs",
    "with cause",
    "named",
    "missed",
    "wrong",
    "abstained",
    "symptom",
    "named ratio",
    "wrong ratio",
)


def _row(s: Score) -> list[str]:
    return [
        str(s.logs),
        str(s.with_cause),
        str(s.count(Outcome.named)),
        str(s.count(Outcome.missed)),
        str(s.count(Outcome.wrong)),
        str(s.count(Outcome.abstained)),
        str(s.count(Outcome.symptom)),
        f"{s.named_ratio:.2f}",
        f"{s.wrong_ratio:.2f}",
    ]


def _table(scores: list[Score]) -> str:
    head = ["part", *COLUMNS]
    rows = [[s.part, *_row(s)] for s in scores]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in [head, *rows]
    ]
    return "\n".join(lines)


def _json(scores: list[Score]) -> str:
    out = {}
    for s in scores:
        out[s.part] = {
            "logs": s.logs,
            "with_cause": s.with_cause,
            **{o.value: s.count(o) for o in Outcome},
            "named_ratio": round(s.named_ratio, 4),
            "wrong_ratio": round(s.wrong_ratio, 4),
            "files": [
                {
                    "file": r.entry.file.name,
                    "source": r.entry.source,
                    "cause": r.entry.cause,
                    "diagnosis": r.diagnosis,
                    "outcome": r.outcome.value,
                }
                for r in s.results
            ],
        }
    return json.dumps(out, indent=2, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--verbose", action="store_true", help="one line per log: outcome, cause, diagnosis")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the held-out goals are missed")
    args = ap.parse_args(argv)

    entries = load_manifest(args.manifest)
    scores = [score(entries, part) for part in PARTS]
    if args.json:
        print(_json(scores))
    else:
        print(_table(scores))
        if args.verbose:
            for s in scores:
                print(f"\n{s.part}:")
                for r in s.results:
                    print(
                        f"  {r.outcome.value:<9} {r.entry.file.name:<48} cause={r.entry.cause} "
                        f"diagnosis={r.diagnosis}"
                    )
    held = next(s for s in scores if s.part == "heldout")
    ok = held.count(Outcome.wrong) == 0 and held.named_ratio >= NAMED_GOAL
    if not args.json:
        verdict = "PASS" if ok else "MISS"
        print(
            f"\n{verdict}: held-out named {held.named_ratio:.2f} (goal >= {NAMED_GOAL:.2f}), "
            f"wrong {held.count(Outcome.wrong)} (goal 0)"
        )
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
