"""Render the plan as a plain, deterministic Ansible inventory beside the spec."""

from __future__ import annotations

from pathlib import Path

from orchestrator.render.inventory import inventory_files
from orchestrator.render.writer import render_text, write_atomic
from orchestrator.spec.gcpause import gc_paused
from orchestrator.validation import ValidationResult


def render_texts(result: ValidationResult) -> dict[str, str]:
    """File texts for a valid result (relative path -> text)."""
    if not result.ok or result.spec is None or result.plan is None or result.document is None:
        raise ValueError("only a valid spec can be rendered")
    with gc_paused():  # hundreds of thousands of short-lived objects for a large site, no cycles
        files = inventory_files(result.spec, result.plan, result.document.sha256)
        return render_text(files, Path(result.filename).name, result.document.sha256)


def render(result: ValidationResult, out_dir: Path) -> list[Path]:
    return write_atomic(out_dir, render_texts(result))
