"""The front half, one direction: load -> check the spec -> plan -> check the plan (-> render).

Every command that reads a spec and every test goes through validate_file / validate_text /
validate_bytes / validate_document. Rendering takes what it needs from the result:
`orchestrator.render.inventory_texts(result.spec, result.plan, name, sha256)` (or render_texts(result)).
"""

from __future__ import annotations

from dataclasses import replace
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
from orchestrator.validation.plan_checks.run import check_plan, replica_layouts
from orchestrator.validation.result import ValidationResult, merge_replica_findings
from orchestrator.validation.spec_checks import check_spec

__all__ = ["ValidationResult", "validate_bytes", "validate_document", "validate_file", "validate_text"]


def _plan(spec: SiteSpec) -> tuple[SitePlan | None, list[Finding]]:
    """Spec checks, then the plan of the replicas that can be placed, then the plan checks on it; the plan
    only when nothing is an error."""
    findings, plannable = check_spec(spec)
    if not plannable:
        return None, findings
    try:
        arch = resolve_model(spec.model)
    except KeyError:
        return None, findings  # model_rules reported it
    layouts = replica_layouts(spec, arch)
    plan = build_plan(spec, arch, [i for i, found in layouts.items() if not found])
    findings += check_plan(spec, arch, plan, layouts)
    if any(f.is_error for f in findings):
        return None, findings
    return plan, findings


def validate_document(doc: Document) -> ValidationResult:
    with gc_paused():
        spec, findings = validate_structure(doc.data)
        plan = None
        if spec is not None:
            plan, findings = _plan(spec)
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
