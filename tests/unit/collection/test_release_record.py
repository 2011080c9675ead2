"""ascend.npu.release_record writes, byte for byte, the file ansible.builtin.copy wrote from ansible-core's
to_nice_json(indent=2, sort_keys=true) (a first release's records are still written so: release.yml), in
one module run, atomically, and leaves an unchanged record alone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ansible.plugins.filter.core import to_nice_json
from ansible_collections.ascend.npu.plugins.modules import release_record as m

RECORD: dict[str, Any] = {
    "current": {
        "release": "3f2a9c",
        "params": {"env": {"VLLM_HOST_IP": "127.0.0.11", "Ü": "ü"}, "command": ["serve", "/w"], "shm": "1g"},
        "time": "2026-12-07T18:00:00Z",
        "warmup_s": 6.65,
        "ready_s": None,
        "ranks": [0, 1],
    },
    "previous": None,
}


def test_the_text_is_what_to_nice_json_gave_copy() -> None:
    assert m.render(RECORD) == to_nice_json(RECORD, indent=2, sort_keys=True)


def test_written_atomically_with_mode_0644_and_unchanged_left_alone(tmp_path: Path) -> None:
    dest = tmp_path / "vllm-r0.json"
    assert m.write(str(dest), m.render(RECORD)) is True
    assert dest.read_text(encoding="utf-8") == m.render(RECORD)
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    inode = dest.stat().st_ino
    assert m.write(str(dest), m.render(RECORD)) is False and dest.stat().st_ino == inode
    assert m.write(str(dest), m.render({**RECORD, "previous": {"release": "1"}})) is True
    assert sorted(os.listdir(tmp_path)) == ["vllm-r0.json"]  # no temporary file left beside it
