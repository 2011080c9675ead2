"""ascend.npu.weights_verify / weights_transfer run as Ansible runs them (a process reading its arguments
from a JSON file), and the weights_fanout filter. Expected hashes come from hashlib, not from the module."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.ascend.npu.plugins.filter.weights_fanout import weights_fanout

from tests.helpers import PATIENCE_S
from tests.unit.collection.module_runner import COLLECTIONS, MODULES

SHARD = 2 * 1024 * 1024 + 11


def run(name: str, args: dict[str, Any], tmp: Path, check_mode: bool = False) -> dict[str, Any]:
    argfile = tmp / f"{name}-args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {**args, "_ansible_check_mode": check_mode}}))
    proc = subprocess.run(
        [sys.executable, str(MODULES / f"{name}.py"), str(argfile)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(COLLECTIONS)},
        timeout=PATIENCE_S,
        check=False,
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def weights(tmp: Path) -> tuple[Path, str, str]:
    """A weights dir and its manifest (written here with hashlib, independently of the modules)."""
    root = tmp / "w"
    root.mkdir()
    files = {"config.json": b"{}", "a.safetensors": os.urandom(SHARD), "b.safetensors": os.urandom(SHARD)}
    rows = []
    for rel, data in sorted(files.items()):
        (root / rel).write_bytes(data)
        rows.append({"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
    text = json.dumps({"files": rows, "format": "ascend-weights-manifest/1"}).encode()
    return root, base64.b64encode(text).decode(), hashlib.sha256(text).hexdigest()


def verify(tmp: Path, root: Path, b64: str, sha: str, check_mode: bool = False, **kw: Any) -> dict[str, Any]:
    args = {"path": str(root), "manifest_b64": b64, "manifest_sha256": sha, **kw}
    return run("weights_verify", args, tmp, check_mode)


def corrupt(path: Path, keep_mtime: bool) -> None:
    st = path.stat()
    with path.open("r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_first_sight_hashes_everything_then_the_fast_path_hashes_nothing(tmp_path: Path) -> None:
    root, b64, sha = weights(tmp_path)
    first = verify(tmp_path, root, b64, sha)
    assert first["verified"] and not first["changed"], first
    assert first["hashed_files"] == 3 and first["hashed_bytes"] == 2 * SHARD + 2
    assert first["read_mib_s"] > 0 and first["verified_at"]
    again = verify(tmp_path, root, b64, sha)
    assert again["verified"] and again["hashed_files"] == 0
    assert (again["read_mib_s"], again["verified_at"]) == (first["read_mib_s"], first["verified_at"])
    full = verify(tmp_path, root, b64, sha, full=True)
    assert full["hashed_files"] == 3


def test_corruption_behind_an_unchanged_mtime_needs_the_full_hash(tmp_path: Path) -> None:
    root, b64, sha = weights(tmp_path)
    verify(tmp_path, root, b64, sha)
    corrupt(root / "a.safetensors", keep_mtime=True)
    assert verify(tmp_path, root, b64, sha)["verified"]  # the fast path trusts size + mtime
    full = verify(tmp_path, root, b64, sha, full=True)
    assert not full["verified"] and full["mismatched"] == ["a.safetensors"]


def test_mismatch_is_moved_aside_never_deleted(tmp_path: Path) -> None:
    root, b64, sha = weights(tmp_path)
    verify(tmp_path, root, b64, sha)
    corrupt(root / "b.safetensors", keep_mtime=False)
    bad = (root / "b.safetensors").read_bytes()
    dry = verify(tmp_path, root, b64, sha, check_mode=True, repair=True)
    assert dry["changed"] and (root / "b.safetensors").exists()  # check mode moves nothing
    res = verify(tmp_path, root, b64, sha, repair=True)
    assert res["changed"] and res["mismatched"] == ["b.safetensors"] and res["need_bytes"] == SHARD
    aside = Path(res["moved"][0]["to"])
    assert aside.name.startswith("b.safetensors.mismatch-") and aside.read_bytes() == bad
    assert not (root / "b.safetensors").exists()
    after = verify(tmp_path, root, b64, sha)
    assert after["missing"] == ["b.safetensors"] and aside.name in after["extra"]


def test_partial_and_missing_files_and_free_space(tmp_path: Path) -> None:
    root, b64, sha = weights(tmp_path)
    with (root / "a.safetensors").open("r+b") as fh:
        fh.truncate(1000)
    (root / "config.json").unlink()
    res = verify(tmp_path, root, b64, sha, repair=True)
    assert res["partial"] == ["a.safetensors"] and res["missing"] == ["config.json"] and not res["moved"]
    assert res["need_bytes"] == SHARD - 1000 + 2
    st = os.statvfs(root)
    assert abs(res["free_bytes"] - st.f_bavail * st.f_frsize) < 64 * 1024 * 1024


def test_a_manifest_of_another_sha256_is_refused(tmp_path: Path) -> None:
    root, b64, _ = weights(tmp_path)
    res = verify(tmp_path, root, b64, "0" * 64)
    assert res.get("failed") and "the spec says " + "0" * 64 in res["msg"]


def test_pull_resumes_a_cut_file(tmp_path: Path) -> None:
    src, _, _ = weights(tmp_path)
    dest = tmp_path / "copy"
    dest.mkdir()
    data = (src / "a.safetensors").read_bytes()
    (dest / "a.safetensors").write_bytes(data[: SHARD // 2])  # what --partial leaves after a cut
    res = run("weights_transfer", {"state": "pulled", "src": str(src), "path": str(dest)}, tmp_path)
    assert res["changed"] and res["files_transferred"] == 3, res
    assert (dest / "a.safetensors").read_bytes() == data
    assert res["literal_bytes"] < SHARD * 2 + 2  # the half already there was not sent again
    assert res["literal_bytes"] == SHARD - SHARD // 2 + SHARD + 2
    again = run("weights_transfer", {"state": "pulled", "src": str(src), "path": str(dest)}, tmp_path)
    assert not again["changed"] and again["literal_bytes"] == 0


def test_check_mode_pull_touches_nothing(tmp_path: Path) -> None:
    src, _, _ = weights(tmp_path)
    args = {"state": "pulled", "src": str(src), "path": str(tmp_path / "copy")}
    assert run("weights_transfer", args, tmp_path, check_mode=True)["changed"]
    assert not (tmp_path / "copy").exists()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 33])
def test_fanout_from_the_controller_takes_log2_rounds(n: int) -> None:
    hosts = [f"s{i:02d}" for i in range(n)]
    rounds = weights_fanout(hosts, [], seeds=1)
    assert len(rounds) == math.ceil(math.log2(n)) + 1
    have: set[str] = set()
    for i, r in enumerate(rounds):
        sources = list(r.values())
        if i == 0:
            assert sources == ["controller"]
        else:
            assert set(sources) <= have and len(set(sources)) == len(sources)  # one peer per seed
        assert not have & set(r)
        have |= set(r)
    assert have == set(hosts)


def test_fanout_from_holders_and_staged() -> None:
    assert weights_fanout(["c", "d", "e"], ["a", "b"]) == [{"c": "a", "d": "b"}, {"e": "a"}]
    assert weights_fanout(["a"], [], controller=False) == []
    assert weights_fanout([], ["a"]) == []
    two_seeds = [{"a": "controller", "b": "controller"}, {"c": "a"}]
    assert weights_fanout(["a", "b", "c"], [], seeds=2) == two_seeds
