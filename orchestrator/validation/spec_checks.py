"""The spec-level rules: what the spec says on its own, before anything is derived from it."""

from __future__ import annotations

from orchestrator.spec.findings import Finding
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import (
    bench_rules,
    gateway_rules,
    host_rules,
    model_rules,
    ops_rules,
    pd_rules,
    platform_rules,
    prelaunch_rules,
    profile_rules,
    references,
    serving_rules,
    software,
    uniqueness,
)

__all__ = ["check_spec"]


def check_spec(spec: SiteSpec) -> tuple[list[Finding], bool]:
    """Every spec-level finding, and whether the plan can be built: it needs resolvable references and
    profiles the chip catalog knows (it budgets their memory)."""
    findings = list(references.check(spec)) + list(uniqueness.check(spec))
    findings += profile_rules.check(spec)
    plannable = not any(f.is_error for f in findings)
    findings += software.check(spec)
    findings += model_rules.check(spec)
    findings += serving_rules.check(spec)
    findings += host_rules.check_tuning(spec)
    findings += host_rules.check_network(spec)
    findings += ops_rules.check(spec)
    findings += gateway_rules.check(spec)
    findings += bench_rules.check(spec)
    findings += platform_rules.check(spec)
    findings += prelaunch_rules.check(spec)
    findings += pd_rules.check(spec)
    return findings, plannable
