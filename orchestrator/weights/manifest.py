"""The sha256 manifest of a weights directory (`orchestrator weights manifest DIR`).

Format (stable; version 1), UTF-8 JSON, keys sorted, one file per line, newline at the end::

    {"format": "ascend-weights-manifest/1",
     "files": [
      {"path": "config.json", "sha256": "<64 hex>", "size": 1234},
      ...
     ]}

`files` holds every regular file under DIR (symlinks followed as files; directories recursed), by POSIX
relative path, sorted by path's UTF-8 bytes. The manifest file itself (MANIFEST_NAME) is never listed. The
sha256 of the manifest's bytes is what the spec's `model.source.manifest_sha256` holds; every server
verifies its copy against the manifest (role model_weights, module ascend.npu.weights_verify).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

FORMAT = "ascend-weights-manifest/1"
MANIFEST_NAME = "weights.manifest.json"
"""Default file name, inside the weights directory (copied along with the weights; never listed)."""
CHUNK = 4 << 20


class ManifestError(Exception):
    """The directory cannot be listed or a file cannot be read; the message says why and what to do."""


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    sha256: str


def list_files(root: Path, skip: frozenset[str] = frozenset()) -> list[tuple[str, Path]]:
    """(relative POSIX path, absolute path) of every file under root but MANIFEST_NAME and `skip`, sorted
    by path bytes."""
    if not root.is_dir():
        raise ManifestError(f"{root} is not a directory. Fix: pass the directory that holds the weights.")
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if rel == MANIFEST_NAME or rel in skip or not full.is_file():
                continue
            found.append((rel, full))
    return sorted(found, key=lambda item: item[0].encode("utf-8"))


def hash_file(path: Path, progress: Callable[[int], None] | None = None) -> tuple[int, str]:
    """(size, sha256 hex) of one file, read in CHUNK pieces; progress(n) after each piece."""
    digest = hashlib.sha256()
    size = 0
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
                if progress is not None:
                    progress(len(chunk))
    except OSError as exc:
        raise ManifestError(
            f"cannot read {path}: {exc.strerror}. Fix: check the file's permissions."
        ) from None
    return size, digest.hexdigest()


def build_manifest(
    root: Path,
    *,
    jobs: int = 4,
    progress: Callable[[int], None] | None = None,
    skip: frozenset[str] = frozenset(),
) -> list[Entry]:
    """Hash every file under root on `jobs` threads (hashlib releases the GIL on large updates)."""
    files = list_files(root, skip)

    def one(item: tuple[str, Path]) -> Entry:
        size, sha = hash_file(item[1], progress)
        return Entry(item[0], size, sha)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, files))


def manifest_text(entries: Iterable[Entry]) -> str:
    """The manifest's exact text (its sha256 is the spec's manifest_sha256)."""
    rows = [
        json.dumps({"path": e.path, "sha256": e.sha256, "size": e.size}, sort_keys=True, ensure_ascii=True)
        for e in sorted(entries, key=lambda e: e.path.encode("utf-8"))
    ]
    body = ",\n".join(f" {r}" for r in rows)
    return (
        f'{{"files": [\n{body}\n], "format": "{FORMAT}"}}\n'
        if rows
        else f'{{"files": [], "format": "{FORMAT}"}}\n'
    )


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_manifest(text: str) -> list[Entry]:
    """Entries of a manifest text; ManifestError when it is not one."""
    try:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
        return [Entry(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in data["files"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ManifestError(
            f"not a weights manifest ({exc}). Fix: write it with `orchestrator weights manifest DIR`."
        ) from None


def write_manifest(
    root: Path,
    out: Path | None = None,
    *,
    jobs: int = 4,
    progress: Callable[[int], None] | None = None,
) -> tuple[Path, str, list[Entry]]:
    """Hash root, write the manifest (default root/MANIFEST_NAME) atomically; (path, its sha256, entries)."""
    target = out if out is not None else root / MANIFEST_NAME
    try:
        skip = frozenset({target.resolve().relative_to(root.resolve()).as_posix()})
    except ValueError:  # outside root
        skip = frozenset()
    entries = build_manifest(root, jobs=jobs, progress=progress, skip=skip)
    text = manifest_text(entries)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        raise ManifestError(f"cannot write {target}: {exc.strerror}. Fix: choose another -o path.") from None
    return target, text_sha256(text), entries


def total_bytes(root: Path, skip: frozenset[str] = frozenset()) -> int:
    return sum(p.stat().st_size for _, p in list_files(root, skip))
