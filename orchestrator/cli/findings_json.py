"""`validate --format json`: the findings and the verdict as one JSON object, for editors and CI."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from orchestrator.spec.findings import Finding, format_path

if TYPE_CHECKING:
    from orchestrator.pipeline import ValidationResult


def finding_json(f: Finding, filename: str) -> dict[str, Any]:
    pos = f.position
    return {
        "severity": f.severity,
        "code": f.code,
        "path": format_path(f.path),
        "file": filename,
        "line": pos.line if pos else None,
        "col": pos.column if pos else None,
        "message": f.message,
        "fix": f.fix,
        "related": [
            {
                "path": format_path(r.path),
                "note": r.note,
                "line": r.position.line if r.position else None,
                "col": r.position.column if r.position else None,
            }
            for r in f.related
        ],
    }


def result_json(result: ValidationResult) -> str:
    """Every finding (not capped: tools filter themselves), the counts and the verdict."""
    doc = {
        "file": result.filename,
        "valid": result.ok,
        "errors": len(result.errors),
        "warnings": len(result.warnings),
        "spec_sha256": result.document.sha256 if result.document else None,
        "spec_version": result.spec_format,
        "findings": [finding_json(f, result.filename) for f in result.findings],
    }
    return json.dumps(doc, indent=2)
