"""Injected faults of the fake vLLM server (``sim fault``), from environment variables and a fault file.

Fault file: ``$FAKE_VLLM_FAULTS``, else ``/var/lib/ascend-sim/vllm-faults.json`` of the server when that
directory is bind-mounted into the container, else ``/usr/local/dcmi/ascend-sim-vllm-faults.json`` (see
``procs.state_path``). Read at start and re-read every
``$FAKE_VLLM_FAULTS_POLL_S`` seconds (default 1), so faults can be switched on and off while serving::

    {
      "never_healthy": false,     # loads, opens the port, /health stays 503 (completions 503 too)
      "crash_after_s": null,      # exit 1 this many seconds after becoming healthy (or after the fault
                                  #   appears, whichever is later); null/absent = never
      "slow_ms": 0,               # extra latency before the first token of every completion
      "wrong_answers": false,     # perturb generated text and logprobs (an accuracy gate must fail)
      "logprob_shift": 0.0,       # same text, every logprob moved by this relative amount (0.05: 5 %
                                  #   more negative): a numerics regression only logprobs show
      "error_line": null,         # print this log line (a verbatim CANN/HCCL error of a public report,
                                  #   tests/data/doctor/verbatim-lines.yaml) to stderr and exit 1
      "kv_transfer_failure": false,   # PD (pd.py): KV pulls from or by this instance fail (Mooncake ret -1)
      "kv_never_freed": false,    # PD prefill: held KV blocks are never freed (neither when the decode is
                                  #   done pulling nor after VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT): a leak
      "wrong_engine_id": false,   # PD prefill: its handshake metadata reports the puller's own engine id,
                                  #   so the decode's "Conflict engine id" assertion fails
      "ports": {"8000": {"slow_ms": 500}}   # overrides for the server whose API port is 8000
    }

Environment (baseline, the file's keys win): ``FAKE_VLLM_NEVER_HEALTHY=1``, ``FAKE_VLLM_CRASH_AFTER_S=N``,
``FAKE_VLLM_SLOW_MS=N``, ``FAKE_VLLM_WRONG_ANSWERS=1``, ``FAKE_VLLM_LOGPROB_SHIFT=X``,
``FAKE_VLLM_KV_TRANSFER_FAILURE=1``, ``FAKE_VLLM_KV_NEVER_FREED=1``, ``FAKE_VLLM_WRONG_ENGINE_ID=1``.
A release that sets them in its container env (the spec's serving.env) carries the fault, so rolling back
to the previous release heals.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

KEYS = (
    "never_healthy",
    "crash_after_s",
    "slow_ms",
    "wrong_answers",
    "logprob_shift",
    "error_line",
    "kv_transfer_failure",
    "kv_never_freed",
    "wrong_engine_id",
)
_FLAGS = {  # boolean faults: file key -> environment variable
    "kv_transfer_failure": "FAKE_VLLM_KV_TRANSFER_FAILURE",
    "kv_never_freed": "FAKE_VLLM_KV_NEVER_FREED",
    "wrong_engine_id": "FAKE_VLLM_WRONG_ENGINE_ID",
}


@dataclass(frozen=True)
class Faults:
    never_healthy: bool = False
    crash_after_s: float | None = None
    slow_ms: int = 0
    wrong_answers: bool = False
    logprob_shift: float = 0.0
    error_line: str | None = None
    kv_transfer_failure: bool = False
    kv_never_freed: bool = False
    wrong_engine_id: bool = False


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def from_env(env: dict[str, str]) -> Faults:
    crash = env.get("FAKE_VLLM_CRASH_AFTER_S", "").strip()
    slow = env.get("FAKE_VLLM_SLOW_MS", "").strip()
    shift = env.get("FAKE_VLLM_LOGPROB_SHIFT", "").strip()
    return Faults(
        never_healthy=_truthy(env.get("FAKE_VLLM_NEVER_HEALTHY")),
        crash_after_s=float(crash) if crash else None,
        slow_ms=max(int(float(slow)), 0) if slow else 0,
        wrong_answers=_truthy(env.get("FAKE_VLLM_WRONG_ANSWERS")),
        logprob_shift=float(shift) if shift else 0.0,
        kv_transfer_failure=_truthy(env.get(_FLAGS["kv_transfer_failure"])),
        kv_never_freed=_truthy(env.get(_FLAGS["kv_never_freed"])),
        wrong_engine_id=_truthy(env.get(_FLAGS["wrong_engine_id"])),
    )


def _apply(base: Faults, data: dict[str, Any]) -> Faults:
    out = base
    if "never_healthy" in data:
        out = replace(out, never_healthy=bool(data["never_healthy"]))
    if "crash_after_s" in data:
        value = data["crash_after_s"]
        out = replace(out, crash_after_s=float(value) if isinstance(value, int | float) else None)
    if "slow_ms" in data:
        value = data["slow_ms"]
        out = replace(out, slow_ms=max(int(value), 0) if isinstance(value, int | float) else 0)
    if "wrong_answers" in data:
        out = replace(out, wrong_answers=bool(data["wrong_answers"]))
    if "logprob_shift" in data:
        value = data["logprob_shift"]
        out = replace(out, logprob_shift=float(value) if isinstance(value, int | float) else 0.0)
    if "error_line" in data:
        value = data["error_line"]
        out = replace(out, error_line=str(value) if isinstance(value, str) and value else None)
    if "kv_transfer_failure" in data:
        out = replace(out, kv_transfer_failure=bool(data["kv_transfer_failure"]))
    if "kv_never_freed" in data:
        out = replace(out, kv_never_freed=bool(data["kv_never_freed"]))
    if "wrong_engine_id" in data:
        out = replace(out, wrong_engine_id=bool(data["wrong_engine_id"]))
    return out


class FaultSource:
    """Current faults for one server (its API ``port`` selects the ``ports`` override, None for headless)."""

    def __init__(self, path: Path, env: dict[str, str], port: int | None) -> None:
        self.path = path
        self.port = port
        self._base = from_env(env)
        self._lock = threading.Lock()
        self._current = self._base
        self._crash_seen_at: float | None = None
        self.reload()

    def reload(self) -> Faults:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        faults = self._base
        if isinstance(data, dict):
            faults = _apply(faults, data)
            per_port = data.get("ports")
            if self.port is not None and isinstance(per_port, dict):
                override = per_port.get(str(self.port))
                if isinstance(override, dict):
                    faults = _apply(faults, override)
        with self._lock:
            if faults.crash_after_s is None:
                self._crash_seen_at = None
            elif self._crash_seen_at is None:
                self._crash_seen_at = time.monotonic()
            self._current = faults
        return faults

    @property
    def current(self) -> Faults:
        with self._lock:
            return self._current

    def crash_deadline(self, healthy_since: float | None) -> float | None:
        """Monotonic time at which crash_after_s fires, or None."""
        with self._lock:
            crash, seen = self._current.crash_after_s, self._crash_seen_at
        if crash is None or healthy_since is None or seen is None:
            return None
        return max(healthy_since, seen) + crash
