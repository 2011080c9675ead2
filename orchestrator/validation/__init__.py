"""Validate a site spec before any host is touched: structure, cross-field rules, capacity; then the plan."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.planning.build import build_plan
from orchestrator.planning.model import SitePlan
from orchestrator.planning.resolve import resolve_model
from orchestrator.spec.findings import Finding, sort_findings
from orchestrator.spec.gcpause import gc_paused
from orchestrator.spec.limits import DEFAULT_LIMITS, LoadLimits
from orchestrator.spec.loader import Document, load_file, parse_bytes, parse_text
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.structural import validate_structure
from orchestrator.spec.version import read_version
from orchestrator.validation import (
    bench_rules,
    gateway_rules,
    host_rules,
    model_rules,
    ops_rules,
    platform_rules,
    prelaunch_rules,
    profile_rules,
    references,
    serving_rules,
    software,
    uniqueness,
)


@dataclass(frozen=True)
class ValidationResult:
    filename: str
    document: Document | None
    spec: SiteSpec | None
    plan: SitePlan | None
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if not f.is_error]

    @property
    def ok(self) -> bool:
        return not self.errors and self.plan is not None

    @property
    def spec_format(self) -> int | None:
        """The spec format the file says it is (0: no spec_version), or None when unread or not an integer."""
        return read_version(self.document.data) if self.document is not None else None

    def with_findings(self, more: list[Finding]) -> ValidationResult:
        """This result with more findings, each placed at its field's line."""
        if not more:
            return self
        doc = self.document
        placed = [f.at(doc.source_map.locate(f.path)) if doc is not None else f for f in more]
        return replace(self, findings=tuple(sort_findings([*self.findings, *placed])))


def _semantic(spec: SiteSpec) -> tuple[SitePlan | None, list[Finding]]:
    findings = list(references.check(spec)) + list(uniqueness.check(spec))
    profiles = list(profile_rules.check(spec))
    findings += profiles
    # planning needs resolvable references and profiles the chip catalog knows (it budgets their memory)
    refs_ok = not any(f.is_error for f in findings)
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
    if not refs_ok:
        return None, findings
    try:
        arch = resolve_model(spec.model)
    except KeyError:
        return None, findings  # model_rules reported it
    plan, found = build_plan(spec, arch)
    findings += found
    if any(f.is_error for f in findings):
        return None, findings
    return plan, findings


_REPLICA_PREFIX = re.compile(r"^replica '(?P<name>[^']+)': (?P<rest>.*)$", re.DOTALL)


def merge_replica_findings(findings: list[Finding]) -> list[Finding]:
    """Fold identical per-replica findings ("replica 'r1': X", "replica 'r2': X") into one."""
    groups: dict[tuple[object, ...], list[str]] = {}
    order: list[tuple[object, ...] | Finding] = []
    for f in findings:
        m = _REPLICA_PREFIX.match(f.message)
        if m is None:
            order.append(f)
            continue
        key = (f.severity, f.path, f.code, f.fix, m["rest"])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(m["name"])
    out: list[Finding] = []
    for item in order:
        if isinstance(item, Finding):
            out.append(item)
            continue
        severity, path, code, fix, rest = item
        names = groups[item]
        who = f"replica '{names[0]}'" if len(names) == 1 else "replicas " + ", ".join(f"'{n}'" for n in names)
        out.append(Finding(severity, path, f"{who}: {rest}", fix, code))  # type: ignore[arg-type]
    return out


def validate_document(doc: Document) -> ValidationResult:
    with gc_paused():
        spec, findings = validate_structure(doc.data)
        plan = None
        if spec is not None:
            plan, findings = _semantic(spec)
    located = []
    unique = list(dict.fromkeys(findings))  # per-replica checks may report the same shared field twice
    for f in merge_replica_findings(unique):
        pos = doc.source_map.locate_key(f.path) if f.code == "unknown-key" else doc.source_map.locate(f.path)
        related = tuple(replace(r, position=doc.source_map.locate(r.path)) for r in f.related)
        located.append(replace(f, position=pos, related=related))
    return ValidationResult(doc.filename, doc, spec, plan, tuple(sort_findings(located)))


def _from(doc: Document | None, findings: list[Finding], filename: str) -> ValidationResult:
    if doc is None:
        return ValidationResult(filename, None, None, None, tuple(sort_findings(findings)))
    return validate_document(doc)


def validate_text(
    text: str, filename: str = "site.yaml", limits: LoadLimits = DEFAULT_LIMITS
) -> ValidationResult:
    return _from(*parse_text(text, filename, limits), filename)


def validate_bytes(
    raw: bytes, filename: str = "site.yaml", limits: LoadLimits = DEFAULT_LIMITS
) -> ValidationResult:
    return _from(*parse_bytes(raw, filename, limits), filename)


def validate_file(path: Path, limits: LoadLimits = DEFAULT_LIMITS) -> ValidationResult:
    """What every CLI command that loads a spec calls."""
    return _from(*load_file(path, limits), str(path))
