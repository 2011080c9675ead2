"""How gen-vllm-flags writes its results: the table JSON and the summary rows of benchmarks/README.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class ReadmeError(RuntimeError):
    """The README section to rewrite is missing."""


def dump(table: dict[str, Any]) -> str:
    """JSON with one option / probe per line, so a new release's diff reads flag by flag."""
    lines = ["{"]
    keys = sorted(table)
    for i, key in enumerate(keys):
        value = table[key]
        comma = "," if i < len(keys) - 1 else ""
        if key in ("options", "probes", "positionals") and isinstance(value, list):
            lines.append(f" {json.dumps(key)}: [")
            for j, item in enumerate(value):
                sep = "," if j < len(value) - 1 else ""
                lines.append(f"  {json.dumps(item, sort_keys=True)}{sep}")
            lines.append(f" ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def readme_rows(tables: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| vLLM | options | option strings (incl. --no- and short forms) | wheel | generated |",
        "|---|---|---|---|---|",
    ]
    for t in tables:
        opts = [o for o in t["options"] if o["action"] != "help"]
        strings = sum(len(o["flags"]) for o in opts)
        rows.append(
            f"| v{t['vllm_version']} | {len(opts)} | {strings} | `{t['wheel']['filename']}` "
            f"(sha256 `{t['wheel']['sha256'][:12]}…`) | {t['generated']} |"
        )
    return rows


def update_readme(readme: Path, tables: list[dict[str, Any]]) -> None:
    """Replace the rows between the markers of ``readme`` with one row per table."""
    begin, end = "<!-- vllm-flag-tables:begin -->", "<!-- vllm-flag-tables:end -->"
    text = readme.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        raise ReadmeError(f"{readme}: the markers {begin} / {end} are missing")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(
        head + begin + "\n" + "\n".join(readme_rows(tables)) + "\n" + end + tail, encoding="utf-8"
    )
