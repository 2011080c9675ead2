"""`orchestrator drift --format json`: the report as one JSON object (tools)."""

from __future__ import annotations

import json

from orchestrator.drift.report import DriftReport


def report_json(report: DriftReport, indent: int | None = None) -> str:
    return json.dumps(report.as_dict(), indent=indent, ensure_ascii=False)
