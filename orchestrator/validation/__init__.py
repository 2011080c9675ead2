"""The rules a site spec must meet: spec-level rules (spec_checks.py and the *_rules modules) on the spec
alone, plan-level rules (plan_checks/) on the plan they are given. orchestrator/pipeline.py runs them in
order; ValidationResult (result.py) is what it returns."""

from __future__ import annotations

from orchestrator.validation.result import ValidationResult

__all__ = ["ValidationResult"]
