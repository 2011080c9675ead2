"""serving.extra_args, read the way the pinned vLLM release's parser reads them.

The release is the ``vllm`` of the spec's vllm-ascend release; its flag table (generated from the vLLM
wheel) resolves every spelling vLLM accepts -- ``--max_model_len``, ``--max-model-len=4k``, ``-tp 4``,
``--no-enable-expert-parallel``, ``--tensor-parallel 4`` (an abbreviation), ``-O3`` -- to one option, so a
flag the plan renders cannot slip through under another name, and each value is checked against the
option's type and choices.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from orchestrator.catalog import (
    DEFAULT_RELEASE,
    FlagSpec,
    FlagTable,
    get_release,
    nearest_table,
    removed_flag,
)
from orchestrator.catalog.flags import removed_notes, suggest_flag
from orchestrator.catalog.vllm_argv import ArgUse, allowed_values, read_args
from orchestrator.planning.serve_args import PLAN_FIELDS
from orchestrator.spec.common import SECRET_NAME
from orchestrator.spec.findings import Finding, SpecPath, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.ascend_config import additional_config_problem
from orchestrator.validation.software import release_of

CODE = "vllm-args"


def pinned_vllm(spec: SiteSpec) -> str:
    """The vLLM version of the spec's vllm-ascend release (the default release's when it is unknown)."""
    release = release_of(spec) or get_release(DEFAULT_RELEASE)
    return release.vllm


def plan_dests(table: FlagTable) -> dict[str, str]:
    """dest -> spec field, for every option of :data:`PLAN_FIELDS` that the release has (every option the
    plan renders is one of them: tests/unit/test_extra_args.py)."""
    return {dest: field for dest, field in PLAN_FIELDS.items() if table.by_dest(dest) is not None}


def check(spec: SiteSpec) -> Iterator[Finding]:
    yield from check_args(spec, spec.serving.extra_args, ("serving", "extra_args"))


def check_args(
    spec: SiteSpec, args: Sequence[str], base: SpecPath, fields: Mapping[str, str] | None = None
) -> Iterator[Finding]:
    """The findings of one extra_args list at `base`; `fields` maps more options (argparse dest) the plan
    sets for this list to the spec field to use instead (they win over PLAN_FIELDS)."""
    if not args:
        return
    vllm = pinned_vllm(spec)
    table = nearest_table(vllm)
    if table.vllm_version != vllm.removeprefix("v"):
        yield warning(
            base,
            f"there is no `vllm serve` flag table for vLLM {vllm}; extra_args are checked against "
            f"{table.label}, the closest older release",
            f"generate it: scripts/gen-vllm-flags --vllm {vllm.removeprefix('v')}",
            CODE,
        )
    owned = plan_dests(table) | {d: f for d, f in (fields or {}).items() if table.by_dest(d) is not None}
    seen: dict[str, str] = {}
    after_unknown = False
    for use in read_args(args, table):
        path: SpecPath = (*base, use.index)
        if use.option is None:
            if use.stray and after_unknown:
                continue  # the value of an option already reported
            after_unknown = not use.stray
            yield from _unknown(spec, table, use, path)
            continue
        after_unknown = False
        yield from _known(table, use, use.option, owned, path)
        if use.option.dest in seen and use.key is None and use.option.action not in ("append", "custom"):
            yield warning(
                path,
                f"{use.given} sets {use.option.name} again (already set by {seen[use.option.dest]}); "
                "vLLM keeps the last one",
                "keep one of them",
                CODE,
            )
        seen.setdefault(use.option.dest, use.given)


def _unknown(spec: SiteSpec, table: FlagTable, use: ArgUse, path: SpecPath) -> Iterator[Finding]:
    if use.stray:
        yield error(
            path,
            f"{use.given!r} is neither a `vllm serve` option nor the value of one; {table.label}'s parser "
            "stops with 'unrecognized arguments'",
            "remove it, or put it after the option it belongs to",
            CODE,
        )
        return
    if use.problem and use.problem.startswith("ambiguous"):
        yield error(path, f"{use.given}: {use.problem} ({table.label})", "write the option in full", CODE)
        return
    gone = removed_flag(use.spelling, table.vllm_version)
    if gone is not None:
        yield error(path, gone.summary + (f": {gone.message}" if gone.message else ""), gone.fix, CODE)
        return
    close = suggest_flag(use.given, table)
    hint = f"did you mean {close}? " if close else ""
    message = f"{use.given} is not a `vllm serve` option of {table.label}"
    if spec.serving.allow_unknown_args:
        yield warning(path, message + " (allowed by serving.allow_unknown_args)", hint or None, CODE)
    else:
        allow = "set serving.allow_unknown_args: true if your vLLM build has it"
        yield error(path, message, f"{hint}or {allow}" if hint else allow, CODE)


def _known(
    table: FlagTable, use: ArgUse, option: FlagSpec, owned: dict[str, str], path: SpecPath
) -> Iterator[Finding]:
    written = " ".join((use.given, *use.values)) if use.values else use.given
    if option.dest == "config":
        yield error(
            path,
            f"{use.given} makes vLLM read more options from a YAML file that validation cannot see, so it "
            "could override the plan",
            "move the file's options into serving.extra_args (or the matching spec fields)",
            CODE,
        )
        return
    if SECRET_NAME.search(option.name) and option.dest != "api_key":
        yield error(
            path,
            f"{use.given} carries a secret, and extra_args are rendered into the inventory in plain text",
            "remove it; the weights phase stages the model on every server, so vLLM needs no hub token "
            "at run time (the API key has its own field: serving.api_key: env:NAME)",
            "secret",
        )
        return
    if option.dest == "additional_config" and use.key is None and use.values:
        found = additional_config_problem(use.values[0])
        if found is not None:
            yield error(path, found[0], found[1], CODE)
            return
    bad = use.problem or use.late_problem
    if option.dest in owned:
        field = owned[option.dest]
        what = (
            f"{use.given} turns off {option.name}, which" if option.negative(use.spelling) else f"{use.given}"
        )
        also = f" (and {table.label} would refuse the value: {bad})" if bad else ""
        yield error(
            path,
            f"{what} is set by {field}; extra_args may not repeat or contradict the plan{also}",
            f"remove {use.given} from extra_args and set {field.split(' ')[0]}",
            CODE,
        )
        return
    if bad:
        allowed = allowed_values(option, table)
        when = "its parser refuses it" if use.problem else "it refuses it when it builds the engine config"
        yield error(
            path,
            f"{written}: {bad} ({table.label}: {when})",
            f"use one of: {', '.join(allowed)}" if allowed else f"give {option.name} a valid value",
            CODE,
        )
        return
    note = removed_notes().get(option.name)
    if use.abbreviated:
        yield warning(
            path,
            f"{use.given} is an abbreviation of {use.spelling}; {table.label} accepts it only while no other "
            "option starts the same way",
            f"write {use.spelling}",
            CODE,
        )
    if note is not None:
        yield warning(
            path, f"{option.name} is still accepted by {table.label}, but {note.message}", note.fix, CODE
        )
    elif option.deprecated:
        yield warning(path, f"{option.name} is deprecated in {table.label}", f"remove {option.name}", CODE)
