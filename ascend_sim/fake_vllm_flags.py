"""The `vllm serve` flag table shipped into the fake vLLM image as ``flags.json``.

It is the table that scripts/gen-vllm-flags generated from the real vLLM wheel of the site's release
(orchestrator/catalog/data/vllm_flags/v<X.Y.Z>.json), copied unchanged: the fake server
(payloads/fake-vllm/fake_vllm/, standard library only) builds its parser from it, so the simulator accepts
and refuses exactly what that release's parser does -- not what our own catalog or validator believe.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from orchestrator.catalog import DEFAULT_RELEASE, flag_table, get_release
from orchestrator.catalog.flags import TABLE_DIR


class FlagTableError(ValueError):
    """There is no generated table for the requested vLLM release."""


def default_vllm() -> str:
    """The vLLM version of the catalog's default vllm-ascend release ('v0.23.0')."""
    return get_release(DEFAULT_RELEASE).vllm


def table_text(vllm_version: str | None = None) -> str:
    """The generated table of ``vllm_version`` (default: the default release's vLLM), checked, as text."""
    version = (vllm_version or default_vllm()).removeprefix("v")
    try:
        flag_table(version)
    except ValueError as exc:
        raise FlagTableError(str(exc)) from exc
    folder = resources.files("orchestrator.catalog").joinpath("data", TABLE_DIR)
    return folder.joinpath(f"v{version}.json").read_text(encoding="utf-8")


def write_flags_json(path: Path, vllm_version: str | None = None) -> Path:
    """Write the table of ``vllm_version`` to ``path`` (parents created) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(table_text(vllm_version), encoding="utf-8")
    return path
