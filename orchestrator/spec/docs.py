"""Generate the spec reference (docs/spec.md) from the pydantic models, so it cannot go stale silently."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from orchestrator.spec.findings import format_path
from orchestrator.spec.ranges import annotation_range, field_range
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.version import READABLE_VERSIONS, RENAMED_VALUES, SPEC_VERSION


def _type_name(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        bounds = annotation_range(annotation)
        base = _type_name(get_args(annotation)[0])
        return f"{base} ({bounds})" if bounds else base
    if origin in (Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in get_args(annotation))
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in get_args(annotation))
    if origin is list:
        return f"list of {_type_name(get_args(annotation)[0])}"
    if origin is dict:
        k, v = get_args(annotation)
        return f"map {_type_name(k)} → {_type_name(v)}"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
        if isinstance(value, BaseModel):
            return "(section defaults)"
        return f"`{value!r}`" if value not in ({}, []) else "empty"
    if field.default is PydanticUndefined:
        return ""
    return f"`{field.default!r}`" if field.default is not None else "null"


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        origin = get_origin(annotation)
        if origin is not None:
            for arg in get_args(annotation):
                visit(arg)
            return
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in seen:
            seen.append(annotation)
            for f in annotation.model_fields.values():
                visit(f.annotation)

    visit(root)
    return seen


def spec_reference() -> str:
    lines = [
        "# Site spec reference",
        "",
        "Generated from the pydantic models by `orchestrator docs --write`; a test fails when it is stale.",
        "Unknown keys are errors everywhere. Secrets are references: `env:NAME` (the controller's",
        "environment) or `file:PATH` (absolute, `~`, or relative to the spec's folder; one line, mode",
        "0600). Every reference and controller-side file a run needs (SSH key, package paths with their",
        "sha256, the weights folder) is checked before the first host is contacted: plan, apply, rollback",
        "and drift exit 2 naming the field, its line and the fix when one is missing, unset or empty (an",
        "empty API key would serve without one); validate reports the same as warnings. A scheduled drift",
        "run gets `env:` secrets from `drift schedule --env-file`; serving.env cannot carry secrets.",
        "",
        *format_version_section(),
    ]
    for model in _models(SiteSpec):
        lines += [f"## {model.__name__}", ""]
        doc = (model.__doc__ or "").strip()
        if doc:
            lines += [" ".join(doc.split()), ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            desc = (field.description or "").replace("|", "\\|")
            bounds = field_range(field)
            if bounds:
                desc = f"{desc} Range: {bounds}.".strip()
            lines.append(f"| `{name}` | {_type_name(field.annotation)} | {_default(field)} | {desc} |")
        lines.append("")
    return "\n".join(lines)


def format_version_section() -> list[str]:
    """The spec format convention, `orchestrator migrate` and each migration (from RENAMED_VALUES)."""
    readable = ", ".join(str(v) for v in READABLE_VERSIONS)
    lines = [
        "## Spec format version",
        "",
        f"Every spec starts with `spec_version: {SPEC_VERSION}`, a required integer, the first key of the "
        "file (after any",
        "leading comments). It names the format the file is written in, so a spec written for an older "
        "release is",
        "recognised instead of being read by rules it was not written for (like Kubernetes' `apiVersion`; "
        "unlike",
        "Compose's `version`, which is optional and ignored, it is required and checked). A release that "
        "changes what a",
        "spec means, or stops accepting something it accepted, raises the format by one and adds a "
        "migration step.",
        f"This release writes format {SPEC_VERSION} and reads format {readable}. `orchestrator validate` "
        "names the format it read",
        "(`valid (spec format 1, ...)`); a spec without `spec_version` is format 0 (written before formats "
        "were",
        "numbered) and gets one error at `spec_version` with the fix; a newer format than this release reads "
        "is refused",
        "with the formats it reads and the advice to upgrade orchestrator.",
        "",
        "`orchestrator migrate SITE` rewrites an older spec in place, one step per format, keeping comments, "
        "key order",
        "and quoting (ruamel.yaml round-trip; written atomically, the file's mode kept), prints one line per "
        "change",
        "with its field path and the new format, then validates the result (exit 2 when it is invalid). "
        "`--check`",
        "prints the changes and exits 1 when a migration is needed, writing nothing; a spec at the current "
        "format:",
        "`nothing to migrate`, exit 0. A file that is not readable YAML gets the loader's error with its fix "
        "(exit 2).",
        "",
        "Migrations:",
        "",
        "- 0 -> 1: `spec_version: 1` is added as the first key (a `schema_version` key, accepted and never "
        "read by",
        "  format 0, is replaced by it on its own line), and values format 1 renamed are rewritten:",
    ]
    for path, renamed in RENAMED_VALUES.items():
        for old, new in renamed.items():
            note = f" ({new.note})" if new.note else ""
            lines.append(f"  - `{format_path(path)}`: `{old}` -> `{new.target}`{note}")
    lines += [
        "",
        "  Validation still refuses those former values (in a spec edited by hand) with what to write "
        "instead, and says",
        "  that `orchestrator migrate` rewrites a format-0 spec.",
        "",
    ]
    return lines
