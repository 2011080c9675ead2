"""Render the plan as a plain, deterministic Ansible inventory beside the spec.

Render takes what it needs, a RenderInput (the spec, its plan, the spec file's name and sha256);
orchestrator/pipeline.py makes one from a valid result (render_input). The functions also take anything
shaped like the pipeline's result (Validated), for callers that hold one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from orchestrator.planning.model import SitePlan
from orchestrator.render.ansible_cfg import ansible_cfg_text
from orchestrator.render.inventory import inventory_files
from orchestrator.render.play_vars import play_vars
from orchestrator.render.writer import RenderConflict, RenderOutcome, header, render_text, write_inventory
from orchestrator.spec.gcpause import gc_paused
from orchestrator.spec.site import SiteSpec

__all__ = ["RenderConflict", "RenderInput", "RenderOutcome", "render", "render_inventory", "render_texts"]


@dataclass(frozen=True)
class RenderInput:
    spec: SiteSpec
    plan: SitePlan
    spec_name: str  # the spec file's name, in every file's header
    spec_sha256: str  # the spec file's sha256, in every file's header and orchestrator_spec_sha256


class _Sha(Protocol):
    @property
    def sha256(self) -> str: ...


class Validated(Protocol):
    """The pipeline's result, as far as render reads it."""

    @property
    def filename(self) -> str: ...
    @property
    def document(self) -> _Sha | None: ...
    @property
    def spec(self) -> SiteSpec | None: ...
    @property
    def plan(self) -> SitePlan | None: ...
    @property
    def ok(self) -> bool: ...


def as_input(source: RenderInput | Validated) -> RenderInput:
    """What render needs from a valid result; ValueError for an invalid one."""
    if isinstance(source, RenderInput):
        return source
    if not source.ok or source.spec is None or source.plan is None or source.document is None:
        raise ValueError("only a valid spec can be rendered")
    return RenderInput(source.spec, source.plan, Path(source.filename).name, source.document.sha256)


def render_texts(source: RenderInput | Validated) -> dict[str, str]:
    """File texts for a valid spec and its plan (relative path -> text)."""
    src = as_input(source)
    with gc_paused():  # hundreds of thousands of short-lived objects for a large site, no cycles
        name, sha = src.spec_name, src.spec_sha256
        files = inventory_files(src.spec, src.plan, sha)
        files["play_vars.yml"] = play_vars(src.plan)
        texts = render_text(files, name, sha)
        texts["ansible.cfg"] = ansible_cfg_text(src.spec.site, len(src.spec.servers), header(name, sha))
        return texts


def render_inventory(source: RenderInput | Validated, out_dir: Path, force: bool = False) -> RenderOutcome:
    """Write the inventory into out_dir; RenderConflict (nothing written) when a file there is not render's
    or was edited by hand (force replaces edited files of render's own, never someone else's)."""
    src = as_input(source)
    texts = render_texts(src)
    return write_inventory(out_dir, texts, spec_name=src.spec_name, spec_sha256=src.spec_sha256, force=force)


def render(source: RenderInput | Validated, out_dir: Path) -> list[Path]:
    """render_inventory without force; the files of the inventory (the manifest not included)."""
    return list(render_inventory(source, out_dir).files)
