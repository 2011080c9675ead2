#!/usr/bin/python
"""ascend.npu.weights_verify: check a weights directory against its sha256 manifest (size + hash per file)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: weights_verify
short_description: Verify model weights against a sha256 manifest, with a size + mtime fast path
description:
  - Reads the manifest (format C(ascend-weights-manifest/1), written by C(orchestrator weights manifest)),
    checks its own sha256 against O(manifest_sha256), then checks every listed file under O(path)
    (size, then sha256).
  - Fast path - a cache file beside the weights (O(cache)) records size, mtime and sha256 of every file the
    last run hashed; a file whose size and mtime are unchanged since then is not read again. O(full=true)
    hashes every file (first sight of a file always hashes it).
  - A file shorter than the manifest says is C(partial) (a cut copy; a resumable copy continues it). A file
    of the right size with another hash, or a longer one, is C(mismatched); with O(repair=true) it is moved
    aside (renamed C(<file>.mismatch-<UTC time>)), never deleted, so that a copy replaces it.
  - Files that the manifest does not list are reported (RV(extra)), never touched.
  - Reports the read throughput measured while hashing (RV(read_mib_s); the last measured value when the
    fast path hashed nothing) and the free space where the weights live (RV(free_bytes)).
options:
  path:
    description: The weights directory on the host.
    type: path
    required: true
  manifest_b64:
    description: The manifest's bytes, base64 (from the controller). One of O(manifest_b64), O(manifest_path).
    type: str
  manifest_path:
    description: The manifest's path on the host.
    type: path
  manifest_sha256:
    description: The sha256 the manifest's bytes must have (the spec's model.source.manifest_sha256).
    type: str
  full:
    description: Hash every file, whatever the cache says.
    type: bool
    default: false
  repair:
    description: Move mismatching files aside (a timestamp suffix) so that a copy can replace them.
    type: bool
    default: false
  cache:
    description: The fast-path cache file. Default C(<path>.verify-cache.json) beside the directory.
    type: path
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Verify the weights (fast path)
  ascend.npu.weights_verify:
    path: /data/models/DeepSeek-R1-W8A8
    manifest_b64: "{{ manifest.content }}"
    manifest_sha256: "{{ model_weights_manifest_sha256 }}"
    repair: true
"""

RETURN = r"""
verified:
  description: Every listed file is present with its size and sha256.
  type: bool
  returned: always
missing:
  description: Listed files that are absent.
  type: list
  elements: str
  returned: always
partial:
  description: Listed files shorter than the manifest says (a cut copy).
  type: list
  elements: str
  returned: always
mismatched:
  description: Listed files of the wrong content (moved aside when O(repair=true), see RV(moved)).
  type: list
  elements: str
  returned: always
moved:
  description: Mismatching files moved aside, as {from, to} (what would be moved in check mode).
  type: list
  elements: dict
  returned: always
extra:
  description: Files under O(path) that the manifest does not list (never touched).
  type: list
  elements: str
  returned: always
files:
  description: Files the manifest lists.
  type: int
  returned: always
bytes:
  description: Bytes the manifest lists.
  type: int
  returned: always
need_bytes:
  description: Bytes a copy still has to write (missing files, the rest of partial ones, mismatched ones).
  type: int
  returned: always
free_bytes:
  description: Free bytes on the filesystem that holds O(path) (or its nearest existing parent).
  type: int
  returned: always
hashed_files:
  description: Files read and hashed by this run.
  type: int
  returned: always
hashed_bytes:
  description: Bytes read and hashed by this run.
  type: int
  returned: always
read_mib_s:
  description: Read + hash throughput in MiB/s measured by this run, or the last measured one (cache).
  type: float
  returned: always
verified_at:
  description: UTC time of the last run that hashed files and found everything verified (cache).
  type: str
  returned: always
manifest_sha256:
  description: The manifest's sha256.
  type: str
  returned: always
"""

import base64
import hashlib
import json
import os
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

FORMAT = "ascend-weights-manifest/1"
CHUNK = 4 << 20
MIB = 1 << 20


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        chunk = fh.read(CHUNK)
        while chunk:
            digest.update(chunk)
            chunk = fh.read(CHUNK)
    return digest.hexdigest()


def load_manifest(raw: bytes, expected: str | None) -> tuple[list[dict[str, Any]], str]:
    sha = hashlib.sha256(raw).hexdigest()
    if expected and sha != expected:
        raise ValueError(
            f"the manifest's sha256 is {sha}, the spec says {expected}. Fix: write it again with "
            "`orchestrator weights manifest DIR` and put the printed sha256 in model.source.manifest_sha256"
        )
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(
            f"the manifest is not of format {FORMAT}. Fix: write it with `orchestrator weights manifest`"
        )
    files: list[dict[str, Any]] = []
    for f in data["files"]:
        rel = str(f["path"])
        if rel.startswith("/") or ".." in rel.split("/"):
            raise ValueError(f"the manifest lists {rel!r}, outside the weights directory")
        files.append({"path": rel, "size": int(f["size"]), "sha256": str(f["sha256"])})
    return files, sha


def read_cache(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {"files": {}}
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {"files": {}}


def write_cache(path: str, data: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, sort_keys=True, indent=1)
    os.replace(tmp, path)


def free_bytes(path: str) -> int:
    probe = path
    while not os.path.exists(probe) and probe not in ("/", ""):
        probe = os.path.dirname(probe)
    st = os.statvfs(probe or "/")
    return st.f_bavail * st.f_frsize


def list_extra(root: str, listed: set[str]) -> list[str]:
    extra = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if rel not in listed:
                extra.append(rel)
    return extra


def check_file(
    root: str, f: dict[str, Any], old: dict[str, Any], full: bool
) -> tuple[str, dict[str, Any], float | None]:
    """(ok | missing | partial | mismatched, cache entry (or {size} of a partial file), seconds hashed)."""
    path = os.path.join(root, f["path"])
    try:
        st = os.stat(path)
    except OSError:
        return "missing", {}, None
    if st.st_size < f["size"]:
        return "partial", {"size": st.st_size}, None
    if st.st_size > f["size"]:
        return "mismatched", {}, None  # longer than listed: wrong without reading it
    seen = old.get(f["path"])
    took = None
    if (
        not full
        and isinstance(seen, dict)
        and seen.get("size") == st.st_size
        and seen.get("mtime_ns") == st.st_mtime_ns
    ):
        sha = seen.get("sha256")
    else:
        started = time.monotonic()
        sha = sha256_file(path)
        took = time.monotonic() - started
    entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}
    return ("ok" if sha == f["sha256"] else "mismatched"), entry, took


def verify(params: dict[str, Any], check_mode: bool) -> dict[str, Any]:
    if params.get("manifest_b64"):
        raw = base64.b64decode(params["manifest_b64"])
    else:
        with open(params["manifest_path"], "rb") as fh:
            raw = fh.read()
    files, manifest_sha = load_manifest(raw, params.get("manifest_sha256"))
    root = os.path.normpath(params["path"])
    cache_path = params.get("cache") or root + ".verify-cache.json"
    cache = read_cache(cache_path)
    old = cache["files"] if cache.get("manifest_sha256") == manifest_sha else {}
    new: dict[str, Any] = {}
    out: dict[str, Any] = {"missing": [], "partial": [], "mismatched": [], "moved": []}
    need = hashed = hashed_bytes = 0
    seconds = 0.0
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for f in files:
        state, sha_new, took = check_file(root, f, old, params["full"])
        if took is not None:
            seconds += took
            hashed += 1
            hashed_bytes += f["size"]
        if state == "ok":
            new[f["path"]] = sha_new
            continue
        out[state].append(f["path"])
        if state == "partial":
            need += f["size"] - int(sha_new["size"])
            continue
        need += f["size"]
        if state == "mismatched" and params["repair"]:
            full = os.path.join(root, f["path"])
            aside = f"{full}.mismatch-{stamp}"
            out["moved"].append({"from": full, "to": aside})
            if not check_mode:
                os.rename(full, aside)
    verified = not (out["missing"] or out["partial"] or out["mismatched"])
    read_mib_s = cache.get("read_mib_s")
    verified_at = cache.get("verified_at") if cache.get("manifest_sha256") == manifest_sha else None
    if hashed_bytes and seconds > 0:
        read_mib_s = round(hashed_bytes / MIB / seconds, 1)
    if verified and (hashed or verified_at is None):
        verified_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    listed = {f["path"] for f in files}
    out.update(
        verified=verified,
        extra=list_extra(root, listed) if os.path.isdir(root) else [],
        files=len(files),
        bytes=sum(f["size"] for f in files),
        need_bytes=need,
        free_bytes=free_bytes(root),
        hashed_files=hashed,
        hashed_bytes=hashed_bytes,
        read_mib_s=read_mib_s,
        verified_at=verified_at if verified else None,
        manifest_sha256=manifest_sha,
        changed=bool(out["moved"]),
    )
    saved = {
        "manifest_sha256": manifest_sha,
        "files": new,
        "read_mib_s": read_mib_s,
        "verified_at": verified_at if verified else None,
    }
    if not check_mode and os.path.isdir(root) and saved != cache:
        write_cache(cache_path, saved)  # bookkeeping of the fast path, not a change of the weights
    return out


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "manifest_b64": {"type": "str"},
            "manifest_path": {"type": "path"},
            "manifest_sha256": {"type": "str"},
            "full": {"type": "bool", "default": False},
            "repair": {"type": "bool", "default": False},
            "cache": {"type": "path"},
        },
        required_one_of=[["manifest_b64", "manifest_path"]],
        mutually_exclusive=[["manifest_b64", "manifest_path"]],
        supports_check_mode=True,
    )
    try:
        result = verify(module.params, module.check_mode)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        module.fail_json(msg=f"{module.params['path']}: cannot verify the weights: {exc}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
