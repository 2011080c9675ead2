"""The release records of the serving containers, read from the servers by playbooks/status.yml (slurp,
read-only) through ansible-runner, in a private data dir of its own that is removed afterwards.

A record is the serve phase's /var/lib/ascend-orchestrator/releases/<container>.json:
{"current": {"release", "image_id", "time", "replica", "role", ...}, "previous": {...} | null}.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.runner.project import Content
from orchestrator.runner.read_job import run_read_job

PLAYBOOK = "status"
STAT = "orchestrator_status_releases"


@dataclass
class Releases:
    records: dict[str, dict[str, dict[str, Any] | None]] = field(default_factory=dict)  # host -> container
    unreachable: dict[str, str] = field(default_factory=dict)  # host -> message
    failed: dict[str, str] = field(default_factory=dict)  # host -> message ("": the playbook did not run)

    def current(self, host: str, container: str) -> dict[str, Any] | None:
        record = self.records.get(host, {}).get(container)
        cur = record.get("current") if isinstance(record, dict) else None
        return cur if isinstance(cur, dict) else None


def _decode(content: str) -> dict[str, Any] | None:
    if not content:
        return None  # no record: the container was never released there
    try:
        data = json.loads(base64.b64decode(content))
    except (binascii.Error, ValueError):
        return None
    return data if isinstance(data, dict) else None


def parse(stats: Mapping[str, Any] | None) -> dict[str, dict[str, dict[str, Any] | None]]:
    """artifact_data of playbook_on_stats -> host -> container -> record (None: no record)."""
    per_host = (stats or {}).get(STAT)
    out: dict[str, dict[str, dict[str, Any] | None]] = {}
    if not isinstance(per_host, Mapping):
        return out
    for host, data in per_host.items():
        if not isinstance(data, Mapping):
            continue
        containers = [str(c) for c in data.get("containers") or []]
        contents = [str(c or "") for c in data.get("records") or []]
        out[str(host)] = {c: _decode(b) for c, b in zip(containers, contents, strict=False)}
    return out


def read_releases(content: Content, inventory_dir: Path, facts_dir: Path, hosts: Sequence[str]) -> Releases:
    """Run playbooks/status.yml on `hosts` (the NPU servers) and collect what it read."""
    found, result = run_read_job(PLAYBOOK, content, inventory_dir, facts_dir, hosts)
    out = Releases(records=parse(found))
    for f in result.failures:
        (out.unreachable if f.unreachable else out.failed)[f.host] = f.message
    return out
