"""From a file to YAML text: bounded read, encoding and character checks, reported as byte offsets.

Nothing here parses YAML. A file that is too large is refused before it is read; a binary file, a UTF-16
file or invalid UTF-8 is reported at a byte offset (there are no lines to count in a file that is not
text); a character that YAML forbids (a control character) is reported at its line and column.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from pathlib import Path

from orchestrator.spec.findings import Finding, Position, error
from orchestrator.spec.limits import MAX_SPEC_SIZE_ENV, LoadLimits, format_size

_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),  # before UTF-16 LE: its BOM starts with the UTF-16 LE one
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
# YAML 1.2 printable characters (section 5.1): everything else is an error in the stream.
_NOT_PRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def too_large(size: int, limits: LoadLimits, what: str) -> Finding:
    return error(
        (),
        f"{what} is {size:,} bytes, more than the {format_size(limits.max_bytes)} a site spec may have "
        "(a spec of 20,000 servers is about 4 MiB)",
        f"check that this is the site spec; if it is, raise the limit with --max-spec-size "
        f"(or the {MAX_SPEC_SIZE_ENV} environment variable), e.g. --max-spec-size 64MiB",
        code="limit",
    )


def read_bounded(path: Path, limits: LoadLimits) -> tuple[bytes | None, list[Finding]]:
    """The file's bytes, never more than limits.max_bytes (+1 to notice a larger stream)."""
    try:
        with path.open("rb") as fh:
            size = _regular_size(fh.fileno())
            if size is not None and size > limits.max_bytes:
                return None, [too_large(size, limits, "the file")]
            raw = fh.read(limits.max_bytes + 1)
    except FileNotFoundError:
        return None, [error((), f"no such file: {path}", "check the path to the site spec", code="io")]
    except OSError as exc:
        return None, [error((), f"cannot read {path}: {exc}", "make the file readable UTF-8 text", code="io")]
    if len(raw) > limits.max_bytes:
        return None, [too_large(len(raw), limits, "the input (at least)")]
    return raw, []


def _regular_size(fd: int) -> int | None:
    st = os.fstat(fd)
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def decode(raw: bytes) -> tuple[str | None, list[Finding]]:
    """UTF-8 text without a byte order mark, or a finding at the byte offset where it stops being text."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            mark = bom.hex(" ").upper()
            return None, [
                _not_utf8(f"the file is {name} text (byte order mark {mark} at byte offset 0)", name)
            ]
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    nul = raw.find(b"\x00")
    if nul >= 0:
        return None, [_nul_finding(raw, nul)]
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex().upper()
        line = raw.count(b"\n", 0, exc.start) + 1
        return None, [
            _not_utf8(
                f"the file is not UTF-8 text: byte 0x{bad} at byte offset {exc.start} (line {line}) is "
                f"{exc.reason}",
                "LATIN1",
            )
        ]


def _nul_finding(raw: bytes, at: int) -> Finding:
    head = raw[:64]
    odd, even = head[1::2].count(0), head[0::2].count(0)
    if len(head) >= 4 and max(odd, even) * 2 >= len(head) // 2:
        order = "UTF-16LE" if odd > even else "UTF-16BE"
        return _not_utf8(
            f"the file looks like {order} text without a byte order mark (NUL byte at byte offset {at})",
            order,
        )
    return error(
        (),
        f"the file is binary, not YAML text: NUL byte at byte offset {at}",
        "pass the site spec (a YAML text file such as inventories/<site>/site.yaml)",
        code="io",
    )


def _not_utf8(what: str, source: str) -> Finding:
    """source: the encoding the file is in (or, for broken UTF-8, a likely one) for the iconv example."""
    return error(
        (),
        what,
        f"save the file as UTF-8, e.g. 'iconv -f {source} -t UTF-8 site.yaml > site.utf8.yaml' (with the "
        "encoding the file was written in)",
        code="io",
    )


def check_characters(text: str) -> Finding | None:
    """The first character YAML does not allow in a stream (control characters), at its line and column."""
    m = _NOT_PRINTABLE.search(text)
    if m is None:
        return None
    at = m.start()
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    offset = len(text[:at].encode("utf-8", "surrogatepass"))
    return error(
        (),
        f"character U+{ord(m.group()):04X} (a control character) at byte offset {offset} is not allowed in "
        "YAML",
        'delete it; write special characters inside a double-quoted string as escapes (e.g. "\\x07")',
        code="yaml",
    ).at(Position(line, col))
