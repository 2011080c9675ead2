"""Reading one log line: strip what vLLM, Ray, torch and `docker logs -t` put in front of it, recognise the
generic wrapper lines every failure prints, and pull out the error codes it carries.

The generic lines and code formats are from the research notes (section 0), which list where each comes
from: torch_npu's ERRxxxxx wrappers, CANN's "E?9999: Inner Error!" headers and inner "TraceBack", the
vLLM engine launcher's "See root cause above".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIXES = (
    re.compile(r"\x1b\[[0-9;]*[A-Za-z]"),  # terminal colours
    re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+"),  # docker logs -t
    # (Worker_TP3 pid=..), (RayWorkerWrapper pid=.., ip=..), (VllmWorker rank=3 pid=..), (VllmWorker TP0 ..)
    re.compile(r"\([A-Za-z][\w-]*(?: [\w=-]+)? pid=\d+(?:, ip=[^)]*)?\)\s*"),
    re.compile(r"\[rank\d+\]:\s*"),  # torch.distributed
    # vLLM's logger: "ERROR 11-07 06:32:37 [multiproc_executor.py:671] " (older: "... worker_base.py:572] ";
    # vllm-ascend#8938 has year and milliseconds: "ERROR 2026-04-25 10:01:17.340 [mooncake_connector.py:246]")
    re.compile(
        r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
        r"\[?[\w./-]+:\d+\]\s*"
    ),
)
_COLOURS = _PREFIXES[0]

_GENERIC = re.compile(
    r"\bERR(?:00100|01100|02200|02005|99999)\b"  # torch_npu: PTA/OPS/DIST wrappers, catch-all
    r"|^(?:\w+Error: )?E[0-9A-Z]9999: Inner Error!\s*$"  # CANN module header; the next line has the message
    r"|^Trace[Bb]ack \(most recent call last\):"  # CANN's inner call chain, Python's traceback header
    r"|Engine core initialization failed\. See root cause above"  # vLLM engine launcher
    r"|EngineDeadError: EngineCore encountered an issue"
    r"|^\[Error\]: "  # torch_npu's canned text per error number
    r"|^Rectify the fault based on the error information in the ascend log"
    r"|^Check the remaining storage space in the hardware environment"
)


def strip_prefix(line: str) -> str:
    """The line without terminal colours and the per-line prefixes of vLLM, Ray, torch and docker."""
    text = _COLOURS.sub("", line).strip()
    changed = True
    while changed:
        changed = False
        for pat in _PREFIXES[1:]:
            m = pat.match(text)
            if m is not None and m.end() > 0:
                text = text[m.end() :].lstrip()
                changed = True
    return text


def is_generic(text: str) -> bool:
    """A wrapper line printed for almost every failure (matched on the stripped text)."""
    return _GENERIC.search(text) is not None


@dataclass(frozen=True)
class Code:
    """An error code seen in a log line. kind: cann (EZ9999, EI0006, ...), pta (ERR00008), acl (6-digit
    runtime/ACL result), dcmi (-8005), driver (drvRetCode=14) or hccl (HCCL function return value)."""

    code: str
    kind: str


_CODES = (
    ("cann", re.compile(r"\b(E[0-9A-Z]\d{4})\b")),
    ("pta", re.compile(r"\b(ERR\d{5})\b")),
    (
        "acl",
        re.compile(
            r"(?:error code is|runtime result =|ErrCode=|errorCode =|failed\s*:|error code:|retCode=)"
            r"\s*(\d{6})\b"
        ),
    ),
    ("dcmi", re.compile(r"dcmi mod(?:ule|el) initiali[sz]ed? failed.*?ret is (-\d+)")),
    ("driver", re.compile(r"(drvRetCode=\d+)")),
    ("hccl", re.compile(r"HCCL function error: .*?error code is (\d+)")),
)


def first_code(text: str) -> Code | None:
    """The leftmost error code in the (stripped) line, if any."""
    best: tuple[int, Code] | None = None
    for kind, pat in _CODES:
        m = pat.search(text)
        if m is not None and (best is None or m.start(1) < best[0]):
            best = (m.start(1), Code(m.group(1), kind))
    return None if best is None else best[1]
