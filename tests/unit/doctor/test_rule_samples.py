"""Each rule recognises the verbatim public log lines the research notes quote for it
(tests/data/doctor/verbatim-lines.yaml, each sample with the address it was read from), embedded in a
generic vLLM startup log and followed by the misleading generic tail every failure prints ("Engine core
initialization failed. See root cause above.", ERR99999)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from orchestrator.doctor.logscan import scan_lines
from orchestrator.doctor.rule import Preflight
from orchestrator.doctor.rules import RULES, log_rules
from tests.helpers import ROOT

DATA = ROOT / "tests/data/doctor"
SAMPLES: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (DATA / "verbatim-lines.yaml").read_text(encoding="utf-8")
)["samples"]
HEAD = (DATA / "generic/head.log").read_text(encoding="utf-8").splitlines()
TAIL = (DATA / "generic/tail.log").read_text(encoding="utf-8").splitlines()
WORKER = "(Worker_TP2 pid=4303) ERROR 12-05 01:00:40 [multiproc_executor.py:671] "

# rules with no log line of their own (research notes R5, R28): checked before launch only
PREFLIGHT_ONLY = {"driver-info-files-missing", "npu-nic-tls-or-link"}
BY_PREFLIGHT = {r.id: r.preflight for r in RULES}

CASES = [
    pytest.param(rule_id, sample, prefix, id=f"{rule_id}-{n}{'-prefixed' if prefix else ''}")
    for rule_id, samples in SAMPLES.items()
    for n, sample in enumerate(samples)
    for prefix in ("", WORKER)
]


@pytest.mark.parametrize(("rule_id", "sample", "prefix"), CASES)
def test_rule_finds_its_public_line_under_a_misleading_tail(
    rule_id: str, sample: dict[str, Any], prefix: str
) -> None:
    lines = [prefix + line for line in sample["lines"]]
    scan = scan_lines([*HEAD, *lines, *TAIL])
    assert scan.match is not None, (rule_id, sample["source"])
    assert scan.match.rule.id == rule_id, sample["source"]
    assert len(HEAD) < scan.match.line_no <= len(HEAD) + len(lines)
    assert sample["source"].startswith("https://")


def test_every_log_rule_has_public_samples_and_the_rest_are_preflight_only() -> None:
    assert {r.id for r in log_rules()} == set(SAMPLES)
    assert {r.id for r in RULES} - set(SAMPLES) == PREFLIGHT_ONLY
    assert all(BY_PREFLIGHT[i] is not Preflight.no for i in PREFLIGHT_ONLY)


def test_rule_set_is_cited_and_complete() -> None:
    assert len(RULES) >= 25
    for r in RULES:
        assert r.sources and all(s.startswith("https://") for s in r.sources), r.id
        assert r.cause.endswith(".") and r.fix.endswith("."), r.id
        assert r.title and r.area, r.id
        if r.patterns:
            assert r.example, r.id
        for other in r.related:
            assert other in BY_PREFLIGHT, (r.id, other)


def test_each_example_line_is_one_of_the_public_samples() -> None:
    """The example the troubleshooting guide prints for a rule is (part of) a line of its public samples."""
    for r in log_rules():
        quoted = [line for s in SAMPLES[r.id] for line in s["lines"]]
        assert any(r.example in line for line in quoted), r.id
