"""The message of a failed or unreachable task, from its result: what a person needs to see, short."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

TAIL_LINES = 5
MAX_CHARS = 2000
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def tail(text: str, lines: int = TAIL_LINES) -> str:
    kept = [ln.rstrip() for ln in strip_ansi(text).replace("\r\n", "\n").splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])


def _item_messages(results: Iterable[Any]) -> list[str]:
    out = []
    for item in results:
        if isinstance(item, Mapping) and item.get("failed"):
            label = item.get("item")
            text = _one(item)
            out.append(f"item {label}: {text}" if label is not None else text)
    return out


def _one(res: Mapping[str, Any]) -> str:
    parts: list[str] = []
    msg = res.get("msg")
    if isinstance(msg, str) and msg.strip():
        parts.append(strip_ansi(msg.strip()))
    elif msg is not None and not isinstance(msg, str):
        parts.append(str(msg))
    for stream in ("stderr", "stdout"):
        value = res.get(stream)
        if isinstance(value, str) and value.strip():
            parts.append(f"{stream}: {tail(value)}")
    if "rc" in res and not any(p.startswith(("stderr", "stdout")) for p in parts):
        parts.append(f"rc {res['rc']}")
    return "\n".join(parts)


def failure_message(res: Mapping[str, Any] | None) -> str:
    """msg, then the tails of stderr and stdout; the failed items of a loop; never longer than MAX_CHARS."""
    if not res:
        return "no result (the task failed before it returned one)"
    parts = [_one(res)] if any(k in res for k in ("msg", "stderr", "stdout", "rc")) else []
    results = res.get("results")
    if isinstance(results, list):
        parts += _item_messages(results)
    text = "\n".join(p for p in parts if p) or "failed (the task returned no message)"
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 3] + "..."
