"""Structural validation: pydantic errors turned into findings with paths, positions and fixes."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from orchestrator.spec.common import SECRET_FIELD_NAMES, SECRET_NAME
from orchestrator.spec.findings import Finding, SpecPath, error, format_path
from orchestrator.spec.gateway import policy_help, policy_hint
from orchestrator.spec.ranges import annotation_range, field_range
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.version import MIGRATE_HINT, RENAMED_VALUES, version_findings

_PATTERN_HINTS = {
    "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$": (
        "must be a lower-case DNS label (letters, digits and '-', not starting or ending with '-')",
        "rename it, e.g. 'atlas-a2-01'",
    ),
    "^[0-9a-f]{64}$": (
        "must be a SHA-256 digest: 64 lower-case hex characters",
        "run 'sha256sum FILE' on the package and paste the first column",
    ),
    "^/": ("must be an absolute path", "start the path with '/'"),
}


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types behind Optional/Union/Annotated/list/dict, for walking the model tree."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        out: list[Any] = []
        for arg in get_args(annotation):
            out.extend(_unwrap(arg))
        return out
    return [annotation]


def model_at(path: SpecPath, root: type[BaseModel] = SiteSpec) -> type[BaseModel] | None:
    """The model class that validates the mapping at `path`, if that mapping is a model."""
    current: Any = root
    for part in path:
        candidates = _unwrap(current)
        nxt: Any = None
        for cand in candidates:
            origin = get_origin(cand)
            if isinstance(part, str) and isinstance(cand, type) and issubclass(cand, BaseModel):
                field = cand.model_fields.get(part)
                if field is not None:
                    nxt = field.annotation
                    break
            elif origin is list and isinstance(part, int):
                nxt = get_args(cand)[0]
                break
            elif origin is dict and isinstance(part, str):
                nxt = get_args(cand)[1]
                break
        if nxt is None:
            return None
        current = nxt
    for cand in _unwrap(current):
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return cand
    return None


def _clean_loc(loc: tuple[int | str, ...], data: Any, missing: bool) -> SpecPath:
    """Drop pydantic's union/validator tags that do not name a key or index of the input.

    Only a 'missing' error may name a key that is not in the input; any other unmatched part is a tag.
    """
    out: list[int | str] = []
    node = data
    for part in loc:
        in_dict = isinstance(node, dict) and isinstance(part, str) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            out.append(part)
            node = node[part]
        elif missing and isinstance(node, dict) and isinstance(part, str) and out[-1:] != [part]:
            # a missing key: keep it (the error is about it), stop walking
            out.append(part)
            node = None
        else:
            break
    return tuple(out)


def _display(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_secret(path: SpecPath) -> bool:
    """Values at these paths may be secrets: never print them."""
    names = [p for p in path if isinstance(p, str)]
    if not names:
        return False
    last = names[-1]
    return (
        last in SECRET_FIELD_NAMES or bool(SECRET_NAME.search(last)) or (last == "url" and "drift" in names)
    )


def _field_doc(path: SpecPath) -> str:
    parent = model_at(path[:-1])
    if parent is None or not path or not isinstance(path[-1], str):
        return ""
    field = parent.model_fields.get(path[-1])
    return f" ({field.description})" if field is not None and field.description else ""


def _translate(err: ErrorDetails, data: Any) -> Finding:
    loc = tuple(err["loc"])
    kind = err["type"]
    path = _clean_loc(loc, data, kind == "missing")
    msg = err["msg"]
    shown = "" if _is_secret(path) else f"; got {_display(err.get('input'))}"
    if kind == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        model = model_at(path[:-1])
        allowed = sorted(model.model_fields) if model is not None else []
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        where = format_path(path[:-1]) if path[:-1] else "the top level"
        hint = f"did you mean '{close[0]}'? " if close else ""
        return error(
            path,
            f"unknown key '{key}' {'at' if not path[:-1] else 'in'} {where}",
            f"{hint}allowed keys here: {', '.join(allowed)}",
            code="unknown-key",
        )
    if kind == "missing":
        key = str(path[-1]) if path else "?"
        where = format_path(path[:-1]) if path[:-1] else "the top level"
        return error(
            path,
            f"required key '{key}' is missing {'at' if not path[:-1] else 'in'} {where}{_field_doc(path)}",
            f"add '{key}:' to {where} (see docs/spec.md)",
            code="missing",
        )
    if kind == "literal_error":
        expected = str(err.get("ctx", {}).get("expected", ""))
        options = [o.strip().strip("'") for o in expected.replace(" or ", ",").split(",") if o.strip()]
        got = err.get("input")
        close = difflib.get_close_matches(str(got), options, n=1, cutoff=0.5) if isinstance(got, str) else []
        fix = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(options)}"
        if path == ("gateway", "policy"):
            hint = policy_hint(str(got)) or (f"did you mean '{close[0]}'? " if close else "")
            return error(
                path,
                f"{_display(got)} is not a vllm-router policy",
                f"{hint}{'The' if hint else 'the'} policies: {policy_help()}",
                "value",
            )
        unquoted = [o for o in options if isinstance(got, int | float) and o.replace("_", "") == str(got)]
        if unquoted:
            fix = f'write it in quotes: "{unquoted[0]}" (unquoted, YAML reads it as the number {got})'
        return error(path, f"{msg}{shown}", fix, code="value")
    if kind == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        what, fix = _PATTERN_HINTS.get(pattern, (msg, "change the value to match the pattern"))
        return error(path, f"{what}{shown}", fix, code="value")
    got = err.get("input")
    if kind == "string_type" and _number(got) and loc[-1:] != ("str",):  # ("str",): one arm of a union
        key = str(path[-1]) if path and isinstance(path[-1], str) else "the value"
        return error(
            path,
            f"YAML read this value as the number {'(hidden)' if _is_secret(path) else _display(got)}, "
            "but it must be text",
            f'quote it exactly as written, e.g. {key}: "..." (unquoted, YAML reads all-digit text as a '
            "number and drops leading zeros)",
            code="type",
        )
    if kind in ("value_error", "assertion_error"):
        text = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        fix = _fix_for_value_error(text)
        renamed = RENAMED_VALUES.get(path, {}).get(got) if isinstance(got, str) else None
        if renamed is not None:  # a value format 0 accepted: migrate writes its replacement
            fix = f"{fix.removesuffix('.')}. {MIGRATE_HINT.format(target=renamed.target)}"
        return error(path, text, fix, code="value")
    return error(path, f"{msg}{shown}", _generic_fix(kind, path), code="type")


def _fix_for_value_error(text: str) -> str:
    if "is not a vllm-router policy" in text:
        return f"write a vllm-router policy: {policy_help()}"
    if "image.base_os names the OS family" in text:
        return "write the OS family of the CANN base image: ubuntu or openeuler"
    if "secret" in text:
        return "put the secret in an environment variable or a file and write e.g. 'env:VLLM_API_KEY'"
    if "an address is written as text" in text:
        return "write the address itself, e.g. 10.0.0.1 (or a subnet such as 10.0.0.0/24)"
    if "invalid version" in text:
        return "write the version as the package names it, e.g. 25.5.1, 8.3.RC2 or v0.23.0"
    if "exactly one of 'path'" in text:
        return "keep either 'path:' (a file on the controller) or 'url:', not both and not neither"
    return "correct the value as described"


def _item_range(annotation: Any) -> str | None:
    """The range of the first bounded type inside an annotation (list items, dict values, union arms)."""
    found = annotation_range(annotation)
    if found is not None:
        return found
    for arg in get_args(annotation):
        found = _item_range(arg)
        if found is not None:
            return found
    return None


def _bounds(path: SpecPath) -> str | None:
    """The allowed range of the number at path: its field's, or its list's/map's item type's."""
    for cut in range(len(path), 0, -1):
        parent, last = model_at(path[: cut - 1]), path[cut - 1]
        if parent is None or not isinstance(last, str) or last not in parent.model_fields:
            continue
        field = parent.model_fields[last]
        own = field_range(field) if cut == len(path) else None
        return own or _item_range(field.annotation)
    return None


def _generic_fix(kind: str, path: SpecPath) -> str:
    doc = _field_doc(path)
    bounds = _bounds(path)
    if bounds is not None and (kind.startswith(("greater", "less")) or kind == "finite_number"):
        return f"use a value inside the allowed range, {bounds}{doc}"
    if kind == "finite_number":
        return f"write a finite number (not .inf or .nan){doc}"
    if kind.startswith(("int_", "float_")):
        return f"write a number{doc}"
    if kind.startswith("bool"):
        return "write true or false"
    if kind == "list_type":
        return f"write a YAML list, e.g. [a, b] or one '- item' per line{doc}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"write a mapping (key: value lines) here{doc}"
    if kind.endswith("_type") or kind.startswith("model_"):
        return f"check the structure of this section{doc} against docs/spec.md"
    if kind.startswith(("greater", "less")):
        return f"use a value inside the allowed range{doc}"
    return f"see docs/spec.md for this field{doc}"


def _union_fix(path: SpecPath) -> str:
    doc = _field_doc(path)
    return f"write one of the accepted forms{doc}" if doc else "see docs/spec.md for the accepted forms"


def _merge_union(findings: list[Finding]) -> list[Finding]:
    """Union branches produce one error per branch at the same path: keep the first, merge messages."""
    seen: dict[SpecPath, Finding] = {}
    order: list[SpecPath] = []
    for f in findings:
        if f.path in seen:
            prev = seen[f.path]
            if f.message not in prev.message and f.code == prev.code == "type":
                first = prev.message.split("; got ")[0]
                seen[f.path] = error(prev.path, f"{first}; or {f.message}", _union_fix(prev.path), prev.code)
            continue
        seen[f.path] = f
        order.append(f.path)
    return [seen[p] for p in order]


def validate_structure(data: Any) -> tuple[SiteSpec | None, list[Finding]]:
    if data == {}:
        return None, [
            error((), "the spec is empty", "start from an example: inventories/*/site.yaml", code="missing")
        ]
    readable, versioned = version_findings(data)
    if not readable:
        return None, versioned
    try:
        spec = SiteSpec.model_validate(data)
    except ValidationError as exc:
        findings = [_translate(e, data) for e in exc.errors(include_url=False)]
        if versioned:  # format 0: its own finding says what to do, not the model's "required key"
            findings = [f for f in findings if f.path != ("spec_version",)]
        return None, [*versioned, *_merge_union(findings)]
    return spec, []
