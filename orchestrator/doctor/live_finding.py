"""What a live doctor check reports about one host: the check's name, ok/warn/fail, what was seen and the fix.

A live check is a pure function of the facts playbooks/doctor.yml gathered on one host (a JSON-like dict:
`expect` from the rendered inventory, `npu` from ascend.npu.npu_info, `health`, `hccn`, `logs`), so each one
is tested on recorded facts (tests/unit/doctor/test_live_checks.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

Facts = Mapping[str, Any]
"""One host's facts as playbooks/doctor.yml handed them over (orchestrator_doctor_facts[host])."""


class Status(StrEnum):
    ok = "ok"
    warn = "warn"
    fail = "fail"


@dataclass(frozen=True)
class Finding:
    host: str
    check: str
    status: Status
    seen: str
    fix: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"status": self.status.value}


@dataclass(frozen=True)
class LiveCheck:
    """A check: its name, what it looks at, the usual fix (for docs/troubleshooting.md) and its function."""

    name: str
    looks_at: str
    fix: str
    run: Callable[[str, Facts], list[Finding]]
    source: str = ""


def npu(facts: Facts) -> Mapping[str, Any]:
    got = facts.get("npu")
    return got if isinstance(got, Mapping) else {}


def expect(facts: Facts) -> Mapping[str, Any]:
    got = facts.get("expect")
    return got if isinstance(got, Mapping) else {}


def driver_loaded(facts: Facts) -> bool:
    return bool((npu(facts).get("npu_smi") or {}).get("usable"))
