"""`orchestrator weights manifest DIR` against an independent computation: coreutils `sha256sum` of every
file and of the written manifest, `stat` sizes, `find` for the file list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.weights.manifest import MANIFEST_NAME, ManifestError, parse_manifest, write_manifest

BIN = Path(sys.executable).parent


def sha256sum(path: Path) -> str:
    out = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True).stdout
    return out.split()[0]


def make_weights(root: Path) -> dict[str, bytes]:
    files = {
        "config.json": b'{"architectures": ["DeepseekV3ForCausalLM"]}',
        "model-00001-of-00002.safetensors": os.urandom(5 * 1024 * 1024 + 7),
        "model-00002-of-00002.safetensors": os.urandom(3 * 1024 * 1024),
        "sub dir/tokenizer.json": b"{}",
        "empty": b"",
        "Z-upper": b"z",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def find_files(root: Path) -> list[str]:
    out = subprocess.run(["find", ".", "-type", "f"], cwd=root, capture_output=True, text=True, check=True)
    return sorted(line[2:] for line in out.stdout.splitlines() if line[2:] != MANIFEST_NAME)


def test_manifest_matches_sha256sum_and_stat(tmp_path: Path) -> None:
    make_weights(tmp_path)
    path, sha, entries = write_manifest(tmp_path, jobs=3)
    assert path == tmp_path / MANIFEST_NAME
    assert sha == sha256sum(path)  # the printed value is the file's own sha256
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "ascend-weights-manifest/1"
    listed = [f["path"] for f in data["files"]]
    assert listed == find_files(tmp_path)  # every file, sorted by byte order (C collation)
    for f in data["files"]:
        assert f["sha256"] == sha256sum(tmp_path / f["path"]), f["path"]
        assert f["size"] == int(subprocess.check_output(["stat", "-c", "%s", str(tmp_path / f["path"])]))
    assert parse_manifest(path.read_text(encoding="utf-8")) == entries


def test_manifest_is_stable_and_ignores_itself(tmp_path: Path) -> None:
    make_weights(tmp_path)
    _, first, _ = write_manifest(tmp_path, jobs=1)
    _, again, _ = write_manifest(tmp_path, jobs=8)  # the manifest now exists inside DIR: not listed
    assert first == again
    (tmp_path / "config.json").write_bytes(b"{}")
    _, changed, _ = write_manifest(tmp_path)
    assert changed != first


def test_output_elsewhere_and_inside(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    make_weights(root)
    out, sha, entries = write_manifest(root, tmp_path / "m.json")
    assert sha == sha256sum(out) and not (root / MANIFEST_NAME).exists()
    _, _, again = write_manifest(root, root / "other.json")
    assert "other.json" not in [e.path for e in again] and again == entries


def test_cli_prints_the_sha256_of_the_file_it_wrote(tmp_path: Path) -> None:
    make_weights(tmp_path)
    out = tmp_path.parent / f"{tmp_path.name}.manifest.json"
    proc = subprocess.run(
        [str(BIN / "orchestrator"), "weights", "manifest", str(tmp_path), "-o", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == sha256sum(out)
    assert "6 files" in proc.stderr


def test_cli_missing_directory_is_a_sentence(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(BIN / "orchestrator"), "weights", "manifest", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "is not a directory. Fix:" in proc.stderr


def test_parse_refuses_other_json() -> None:
    with pytest.raises(ManifestError, match="not a weights manifest"):
        parse_manifest('{"files": []}')
