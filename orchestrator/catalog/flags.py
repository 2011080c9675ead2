"""`vllm serve` options of every pinned vLLM release, as vLLM's own parser registers them.

The tables (``data/vllm_flags/v<X.Y.Z>.json``) are generated from the released vLLM wheels on PyPI by
``scripts/gen-vllm-flags``: one per vLLM version that a vllm-ascend release in vllm_ascend.yaml pins, each
recording the wheel (file name, sha256), the generation date, every option (option strings, dest, argparse
action, value type, nargs, choices, simple default) and the outcome of a fixed list of command lines run
through the real parser ("probes"). Nothing here is written by hand except ``data/vllm_flags_removed.yaml``:
the message and fix for removed flags that users bring from older guides (e.g. ``--swap-space``), each with
its source. Whether and when a flag was removed follows from the tables themselves.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

from orchestrator.catalog._data import CatalogDataError, load, rows
from orchestrator.catalog.version import Version

TABLE_DIR = "vllm_flags"
REMOVED_FILE = "vllm_flags_removed.yaml"
TABLE_SCHEMA = 1
#: How a value is converted, named after vLLM's converters (probe.py ``type_kind``).
VALUE_KINDS = frozenset(
    {
        "int",
        "float",
        "str",
        "json",
        "json_or_str",
        "human_readable_int",
        "human_readable_int_or_auto",
        "lower_snake",
        "comma_list",
        "bool_constructor",
        "port",
    }
)
#: argparse actions that consume values; the others (store_true, boolean_optional, help, ...) take none.
VALUE_ACTIONS = frozenset({"store", "append", "extend", "custom"})


@dataclass(frozen=True)
class FlagSpec:
    """One option of ``vllm serve`` in one release."""

    flags: tuple[str, ...]
    dest: str
    action: str
    kind: str | None
    optional: bool
    nargs: int | str | None
    choices: tuple[Any, ...] | None
    deprecated: bool

    @property
    def name(self) -> str:
        """The long form users know it by ('--enable-expert-parallel', not its --no- twin or '-ep')."""
        negatives = {f"--no-{f[2:]}" for f in self.flags} if self.action == "boolean_optional" else set()
        longs = [f for f in self.flags if f.startswith("--") and f not in negatives]
        return longs[0] if longs else self.flags[0]

    @property
    def takes_value(self) -> bool:
        return self.action in VALUE_ACTIONS and self.nargs != 0

    def negative(self, option: str) -> bool:
        """True for the ``--no-X`` spelling of a BooleanOptionalAction."""
        return self.action == "boolean_optional" and option.startswith("--no-") and option != self.name


@dataclass(frozen=True)
class Probe:
    """A command line run through the real parser: what it set, or the error it ended with."""

    argv: tuple[str, ...]
    ok: bool
    sets: Mapping[str, Any]
    error: str


@dataclass(frozen=True)
class FlagTable:
    """The options of ``vllm serve`` in one vLLM release."""

    vllm_version: str
    generated: str
    wheel: str
    wheel_sha256: str
    allow_abbrev: bool
    options: tuple[FlagSpec, ...]
    quantization_methods: tuple[str, ...]
    probes: tuple[Probe, ...]
    by_option: Mapping[str, FlagSpec]

    @property
    def label(self) -> str:
        return f"vLLM v{self.vllm_version}"

    def get(self, option: str) -> FlagSpec | None:
        return self.by_option.get(option)

    def by_dest(self, dest: str) -> FlagSpec | None:
        return next((o for o in self.options if o.dest == dest), None)

    def probe(self, *argv: str) -> Probe | None:
        return next((p for p in self.probes if p.argv == argv), None)

    @functools.cached_property
    def short_o(self) -> FlagSpec | None:
        """The option that ``-O3`` sets in this release (recorded by the probes): the optimization level
        from v0.13, a shorthand of --compilation-config before."""
        probe = self.probe("-O3")
        if probe is None or not probe.ok or len(probe.sets) != 1:
            return None
        return self.by_dest(next(iter(probe.sets)))


def _options(raw: Any, where: str) -> tuple[FlagSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise CatalogDataError(f"{where}: 'options' must be a non-empty list")
    out: list[FlagSpec] = []
    for i, item in enumerate(raw):
        flags = item.get("flags") if isinstance(item, dict) else None
        if not (
            isinstance(flags, list) and flags and all(isinstance(f, str) and f[:1] == "-" for f in flags)
        ):
            raise CatalogDataError(f"{where}: options[{i}]: 'flags' must list option strings")
        kind = item.get("type")
        if item["action"] in VALUE_ACTIONS and kind not in VALUE_KINDS:
            raise CatalogDataError(f"{where}: {flags[0]}: unknown value type {kind!r}")
        choices = item.get("choices")
        out.append(
            FlagSpec(
                flags=tuple(flags),
                dest=str(item["dest"]),
                action=str(item["action"]),
                kind=kind if item["action"] in VALUE_ACTIONS else None,
                optional=bool(item.get("optional", False)),
                nargs=item.get("nargs"),
                choices=tuple(choices) if isinstance(choices, list) else None,
                deprecated=bool(item.get("deprecated", False)),
            )
        )
    return tuple(out)


def parse_table(data: Any, where: str) -> FlagTable:
    """Check a generated table (parsed JSON); raises CatalogDataError naming the file."""
    if not isinstance(data, dict) or data.get("schema_version") != TABLE_SCHEMA:
        raise CatalogDataError(f"{where}: not a vLLM flag table (schema_version {TABLE_SCHEMA})")
    try:
        options = _options(data.get("options"), where)
        by_option: dict[str, FlagSpec] = {}
        for spec in options:
            for flag in spec.flags:
                if flag in by_option:
                    raise CatalogDataError(f"{where}: option string {flag} is registered twice")
                by_option[flag] = spec
        probes = tuple(
            Probe(tuple(p["argv"]), p["exit"] == 0, MappingProxyType(p.get("set", {})), p.get("error", ""))
            for p in data["probes"]
        )
        return FlagTable(
            vllm_version=str(data["vllm_version"]),
            generated=str(data["generated"]),
            wheel=str(data["wheel"]["filename"]),
            wheel_sha256=str(data["wheel"]["sha256"]),
            allow_abbrev=bool(data["allow_abbrev"]),
            options=options,
            quantization_methods=tuple(data["quantization_methods"]),
            probes=probes,
            by_option=MappingProxyType(by_option),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise CatalogDataError(f"{where}: malformed flag table ({type(exc).__name__}: {exc})") from None


@functools.cache
def _table_files() -> Mapping[str, str]:
    folder = resources.files("orchestrator.catalog").joinpath("data", TABLE_DIR)
    names = [p.name for p in folder.iterdir() if p.name.startswith("v") and p.name.endswith(".json")]
    return MappingProxyType({name[1:-5]: name for name in names})


@functools.cache
def table_versions() -> tuple[str, ...]:
    """vLLM versions with a generated table ('0.9.1', ..., '0.25.1'), oldest first."""
    return tuple(sorted(_table_files(), key=Version))


def has_table(vllm_version: str) -> bool:
    return vllm_version.removeprefix("v") in _table_files()


@functools.cache
def flag_table(vllm_version: str) -> FlagTable:
    """The table of one vLLM release ('v0.23.0' or '0.23.0'); CatalogDataError if none was generated."""
    version = vllm_version.removeprefix("v")
    name = _table_files().get(version)
    if name is None:
        raise CatalogDataError(
            f"no `vllm serve` flag table for vLLM v{version}: run scripts/gen-vllm-flags --vllm {version}"
        )
    path = f"data/{TABLE_DIR}/{name}"
    try:
        text = resources.files("orchestrator.catalog").joinpath("data", TABLE_DIR, name).read_text("utf-8")
        data = json.loads(text)
    except ValueError as exc:
        raise CatalogDataError(f"{path}: not valid JSON: {exc}") from None
    table = parse_table(data, path)
    if table.vllm_version != version:
        raise CatalogDataError(f"{path}: describes vLLM {table.vllm_version}, not {version}")
    return table


def nearest_table(vllm_version: str) -> FlagTable:
    """The table of ``vllm_version``, else of the newest release before it, else the oldest one."""
    if has_table(vllm_version):
        return flag_table(vllm_version)
    older = [v for v in table_versions() if Version(v) < Version(vllm_version)]
    return flag_table(older[-1] if older else table_versions()[0])


# --------------------------------------------------------------------------------- removed / added flags


@dataclass(frozen=True)
class RemovedFlag:
    """A flag a release does not accept although another pinned release does; ``message`` and ``fix`` come
    from vllm_flags_removed.yaml when it explains the flag (``message`` is empty otherwise)."""

    flag: str
    vllm_version: str
    last_with: str | None
    first_without: str | None
    added_in: str | None
    message: str
    fix: str

    @property
    def summary(self) -> str:
        if self.added_in is not None:
            return (
                f"{self.flag} first appears in vLLM v{self.added_in}; v{self.vllm_version} has no such flag"
            )
        return (
            f"{self.flag} was removed from vLLM: the pinned releases up to v{self.last_with} have it, "
            f"v{self.first_without} and later do not (this site pins v{self.vllm_version})"
        )


@dataclass(frozen=True)
class RemovedNote:
    flag: str
    message: str
    fix: str
    source: str


def validate_removed(data: Mapping[str, Any], filename: str = REMOVED_FILE) -> Mapping[str, RemovedNote]:
    """Check the hand-written messages for removed flags; raises CatalogDataError naming the row."""
    out: dict[str, RemovedNote] = {}
    for row in rows(data, "removed", filename):
        note = RemovedNote(row.text("flag"), row.text("message"), row.text("fix"), row.text("source"))
        row.done()
        if note.flag in out:
            raise row.error(f"{note.flag} is listed twice")
        out[note.flag] = note
    return MappingProxyType(out)


@functools.cache
def removed_notes() -> Mapping[str, RemovedNote]:
    return validate_removed(load(REMOVED_FILE))


def flag_history(option: str) -> tuple[tuple[str, bool], ...]:
    """(vLLM version, has the option) for every generated table, oldest first."""
    return tuple((v, flag_table(v).get(option) is not None) for v in table_versions())


def removed_flag(option: str, vllm_version: str) -> RemovedFlag | None:
    """When ``option`` is absent from ``vllm_version``'s table but present in another pinned release's."""
    version = vllm_version.removeprefix("v")
    if nearest_table(version).get(option) is not None:
        return None
    history = flag_history(option)
    present = [v for v, has in history if has]
    if not present:
        return None
    note = removed_notes().get(option)
    older = [v for v in present if Version(v) < Version(version)]
    if not older:
        return RemovedFlag(
            option,
            version,
            None,
            None,
            present[0],
            note.message if note else "",
            f"remove {option}, or pin a vllm-ascend release whose vLLM has it (v{present[0]} or later)",
        )
    last = older[-1]
    later = [v for v, has in history if not has and Version(v) > Version(last)]
    first_without = later[0] if later else version
    return RemovedFlag(
        option,
        version,
        last,
        first_without,
        None,
        note.message if note else "",
        note.fix if note else f"remove {option}",
    )


def suggest_flag(option: str, table: FlagTable) -> str | None:
    """The closest option of the release ('--tensor-parallel-sise' -> '--tensor-parallel-size')."""
    name = option.split("=", 1)[0].strip()
    if name.startswith("-") and not name.startswith("--") and len(name) > 3:
        name = "-" + name  # '-tensor-parallel-size' -> '--tensor-parallel-size'
    name = name.lower().replace("_", "-")
    longs = sorted(f for f in table.by_option if f.startswith("--"))
    if name in table.by_option and name != option:
        return name
    close = difflib.get_close_matches(name, longs, n=1, cutoff=0.75)
    return close[0] if close else None
