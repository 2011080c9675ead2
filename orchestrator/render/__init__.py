"""Render the plan as a plain, deterministic Ansible inventory beside the spec."""

from __future__ import annotations

from pathlib import Path

from orchestrator.render.ansible_cfg import ansible_cfg_text
from orchestrator.render.inventory import inventory_files
from orchestrator.render.play_vars import play_vars
from orchestrator.render.writer import RenderConflict, RenderOutcome, header, render_text, write_inventory
from orchestrator.spec.gcpause import gc_paused
from orchestrator.validation import ValidationResult

__all__ = ["RenderConflict", "RenderOutcome", "render", "render_inventory", "render_texts"]


def render_texts(result: ValidationResult) -> dict[str, str]:
    """File texts for a valid result (relative path -> text)."""
    if not result.ok or result.spec is None or result.plan is None or result.document is None:
        raise ValueError("only a valid spec can be rendered")
    with gc_paused():  # hundreds of thousands of short-lived objects for a large site, no cycles
        name, sha = Path(result.filename).name, result.document.sha256
        files = inventory_files(result.spec, result.plan, sha)
        files["play_vars.yml"] = play_vars(result.plan)
        texts = render_text(files, name, sha)
        texts["ansible.cfg"] = ansible_cfg_text(result.spec.site, len(result.spec.servers), header(name, sha))
        return texts


def render_inventory(result: ValidationResult, out_dir: Path, force: bool = False) -> RenderOutcome:
    """Write the inventory into out_dir; RenderConflict (nothing written) when a file there is not render's
    or was edited by hand (force replaces edited files of render's own, never someone else's)."""
    texts = render_texts(result)
    sha = result.document.sha256 if result.document is not None else None
    return write_inventory(out_dir, texts, spec_name=Path(result.filename).name, spec_sha256=sha, force=force)


def render(result: ValidationResult, out_dir: Path) -> list[Path]:
    """render_inventory without force; the files of the inventory (the manifest not included)."""
    return list(render_inventory(result, out_dir).files)
