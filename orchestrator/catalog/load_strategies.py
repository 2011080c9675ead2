"""What `vllm serve --safetensors-load-strategy` takes in each vLLM release with a flag table.

The facts are upstream text: ``data/vllm_load_strategies.yaml`` holds vLLM's own declaration and docstring of
``LoadConfig.safetensors_load_strategy`` from the wheel each flag table was generated from
(``scripts/gen-load-strategies``). The values are the docstring's ``- "name":`` items, the default is the
declaration's; a release whose default is None prefetches by itself on a network filesystem when the
checkpoint fits in RAM (its docstring says so). In short: v0.11 lazy/eager, v0.13 adds torchao, v0.18 adds
prefetch, v0.21 makes the default None with that auto-prefetch (https://github.com/vllm-project/vllm/pull/24469,
https://github.com/vllm-project/vllm/pull/36012, https://github.com/vllm-project/vllm/pull/37673)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.catalog._data import CatalogDataError, load
from orchestrator.catalog.version import Version

FILE = "vllm_load_strategies.yaml"
_ITEM = re.compile(r'^- "(\w+)"', re.M)
_DEFAULT = re.compile(r'=\s*(None|"(\w+)")\s*$')


@dataclass(frozen=True)
class LoadStrategies:
    """``--safetensors-load-strategy`` in one vLLM release."""

    vllm_version: str
    values: tuple[str, ...]
    default: str | None  # None: vLLM picks (mmap, auto-prefetch on a network filesystem)
    auto_prefetch: bool
    wheel: str

    @property
    def label(self) -> str:
        return f"vLLM v{self.vllm_version}"


def parse(version: str, row: Any) -> LoadStrategies | None:
    where = f"{FILE}: releases.{version}"
    if not isinstance(row, dict) or "field" not in row or not isinstance(row.get("wheel"), dict):
        raise CatalogDataError(f"{where}: needs 'wheel' and 'field'")
    field = row["field"]
    if field is None:
        return None
    decl, doc = str(field.get("declaration", "")), str(field.get("docstring", ""))
    values = tuple(_ITEM.findall(doc))
    default = _DEFAULT.search(decl)
    if not values or default is None:
        raise CatalogDataError(f"{where}: no values in the docstring or no default in {decl!r}")
    return LoadStrategies(
        vllm_version=version,
        values=values,
        default=default.group(2),
        auto_prefetch=default.group(2) is None and "prefetching is enabled automatically" in doc,
        wheel=str(row["wheel"].get("filename", "")),
    )


def validate_load_strategies(data: Mapping[str, Any]) -> dict[str, LoadStrategies | None]:
    """Every release of the file, parsed; CatalogDataError naming the release on the first problem."""
    raw = data.get("releases")
    if not isinstance(raw, dict) or not raw:
        raise CatalogDataError(f"{FILE}: 'releases' must be a non-empty mapping")
    return {str(v): parse(str(v), row) for v, row in raw.items()}


@functools.cache
def _releases() -> dict[str, LoadStrategies | None]:
    return validate_load_strategies(load(FILE))


def load_strategies(vllm_version: str) -> LoadStrategies | None:
    """The release's strategies (the newest release at or before it that the file has); None when that
    release has no --safetensors-load-strategy."""
    version = vllm_version.removeprefix("v")
    known = sorted(_releases(), key=Version)
    older = [v for v in known if Version(v) <= Version(version)]
    return _releases()[older[-1] if older else known[0]]
