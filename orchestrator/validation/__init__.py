"""The rules a site spec must meet: spec-level rules (spec_checks.py and the *_rules modules) on the spec
alone, plan-level rules (plan_checks/) on the plan they are given. orchestrator/pipeline.py runs them in
order; ValidationResult (result.py) is what it returns."""

from __future__ import annotations

from orchestrator.validation.result import ValidationResult

__all__ = ["ValidationResult", "validate_text"]


def validate_text(text: str, filename: str = "site.yaml") -> ValidationResult:
    """orchestrator.pipeline.validate_text, for the simulator's spec writer (which imports it from here)."""
    from orchestrator.pipeline import validate_text as run

    return run(text, filename)
