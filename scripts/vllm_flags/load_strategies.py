"""Generate orchestrator/catalog/data/vllm_load_strategies.yaml: what ``--safetensors-load-strategy`` takes in
each vLLM release that has a flag table.

Run through ``scripts/gen-load-strategies``. For every table in orchestrator/catalog/data/vllm_flags, the
same wheel (file name and sha256 from the table, which must equal the sha256 PyPI's simple index lists for
that file) is read with HTTP range requests, member by member (zipfile checks each member's CRC), so only
the wheel's directory and one source file are downloaded. The source is vLLM's ``LoadConfig``
(``vllm/config/load.py``; ``vllm/config.py`` before it moved): its ``safetensors_load_strategy`` field's
declaration line and docstring (dedented by inspect.cleandoc) are written verbatim;
orchestrator/catalog/load_strategies.py reads the accepted values and the default from that text. A
release whose LoadConfig has no such field gets ``field: null``. Nothing here is needed at test time: the
YAML is committed as package data.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import inspect
import io
import json
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "orchestrator" / "catalog" / "data" / "vllm_flags"
OUT = ROOT / "orchestrator" / "catalog" / "data" / "vllm_load_strategies.yaml"
SIMPLE = "https://pypi.org/simple/vllm/"
SOURCES = ("vllm/config/load.py", "vllm/config.py")
FIELD = "safetensors_load_strategy"


class RangeFile(io.RawIOBase):
    """A remote file read with HTTP range requests (what zipfile needs: seek, tell, readinto)."""

    def __init__(self, url: str) -> None:
        self.url, self.pos = url, 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=120) as r:
            self.size = int(r.headers["Content-Length"])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def readinto(self, buf: Any) -> int:
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        headers = {"Range": f"bytes={self.pos}-{self.pos + n - 1}"}
        with urllib.request.urlopen(urllib.request.Request(self.url, headers=headers), timeout=120) as r:
            data = r.read()
        buf[: len(data)] = data
        self.pos += len(data)
        return len(data)


def index() -> dict[str, dict[str, Any]]:
    req = urllib.request.Request(SIMPLE, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return {f["filename"]: f for f in json.load(r)["files"]}


def field_text(source: str) -> tuple[str, str] | None:
    """(declaration line, docstring) of LoadConfig.safetensors_load_strategy, verbatim."""
    tree = ast.parse(source)
    lines = source.splitlines()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ClassDef) and node.name == "LoadConfig"):
            continue
        body = node.body
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.AnnAssign) and getattr(stmt.target, "id", None) == FIELD:
                decl = "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno]).strip()
                doc = body[i + 1] if i + 1 < len(body) else None
                docstring = isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                text = doc.value.value if docstring else ""  # type: ignore[union-attr]
                return decl, inspect.cleandoc(str(text)) + "\n"
    return None


def release(table: Path, files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    data = json.loads(table.read_text())
    wheel = data["wheel"]
    listed = files.get(wheel["filename"])
    if listed is None or listed["hashes"].get("sha256") != wheel["sha256"]:
        raise SystemExit(f"{table.name}: PyPI lists no {wheel['filename']} with sha256 {wheel['sha256']}")
    archive = zipfile.ZipFile(io.BufferedReader(RangeFile(listed["url"]), buffer_size=1 << 18))
    names = set(archive.namelist())
    for path in SOURCES:
        if path not in names:
            continue
        found = field_text(archive.read(path).decode())
        if found is not None:
            decl, doc = found
            return {"wheel": wheel, "source": path, "field": {"declaration": decl, "docstring": doc}}
    return {"wheel": wheel, "source": next(p for p in SOURCES if p in names), "field": None}


def block(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args(argv)
    files = index()
    releases = {}
    for table in sorted(TABLES.glob("v*.json"), key=lambda p: tuple(int(x) for x in p.stem[1:].split("."))):
        releases[table.stem[1:]] = release(table, files)
        print(table.stem, releases[table.stem[1:]]["field"] is not None, file=sys.stderr)
    header = (
        "# Generated by scripts/gen-load-strategies: vLLM's LoadConfig.safetensors_load_strategy\n"
        "# (declaration and docstring, verbatim) in the wheel of each flag table (data/vllm_flags, same\n"
        "# file and sha256).\n"
        "# Sources: each release's wheel on PyPI (https://pypi.org/project/vllm/, named in\n"
        "# releases.<version>.wheel), its vllm/config/load.py (vllm/config.py before v0.11).\n"
        "# Read by orchestrator/catalog/load_strategies.py. Do not edit by hand.\n"
    )
    body = {"schema_version": 1, "generated": dt.date.today().isoformat(), "releases": releases}
    yaml.SafeDumper.add_representer(str, block)
    OUT.write_text(header + yaml.safe_dump(body, sort_keys=False, width=110, allow_unicode=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
