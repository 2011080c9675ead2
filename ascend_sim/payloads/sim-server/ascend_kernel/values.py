"""How the kernel parses what is written to its files, and prints what is read (Linux 6.1 semantics).

Every parser takes the bytes of one write(2) as text and returns the canonical stored value, or raises
KernelError with the errno the kernel returns (EINVAL for a malformed or out-of-range value, ERANGE for a CPU
beyond the last one). Sources: kernel/sysctl.c (proc_get_long, __do_proc_dointvec: base-0 numbers, surrounding
blanks), lib/kstrtox.c (kstrtoull: base 0, one optional trailing newline), lib/bitmap.c (bitmap_parselist,
bitmap_parse), lib/string.c (sysfs_streq), drivers/cpufreq/cpufreq.c (store_scaling_governor: first word,
case-insensitive), kernel/params.c (param_set_bool via kstrtobool).
"""

from __future__ import annotations

import errno
import re

from ascend_kernel.state import KernelError

_C_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def _einval(what: str) -> KernelError:
    return KernelError(errno.EINVAL, f"Invalid argument: {what!r}")


def c_int(token: str) -> int:
    """A C integer literal with base 0 (0x.. hex, 0.. octal, else decimal), optional sign."""
    if not _C_INT.fullmatch(token):
        raise _einval(token)
    sign = -1 if token.startswith("-") else 1
    body = token.lstrip("+-")
    if body.lower().startswith("0x"):
        return sign * int(body[2:], 16)
    if body.startswith("0") and len(body) > 1:
        return sign * int(body[1:], 8)
    return sign * int(body)


def sysctl_int(text: str, lo: int, hi: int) -> str:
    """proc_dointvec_minmax / proc_doulongvec_minmax, one-value entry: one base-0 number, blanks around."""
    words = text.split()
    if len(words) != 1:
        raise _einval(text)
    value = c_int(words[0])
    if not lo <= value <= hi:
        raise _einval(text)
    return str(value)


def kstrtoull(text: str) -> int:
    """kstrtoull(buf, 0): the whole write is one unsigned number, with at most one trailing newline."""
    body = text[:-1] if text.endswith("\n") else text
    if body.startswith(("-", "+")) or not body:
        raise _einval(text)
    value = c_int(body)
    if value >= 1 << 64:
        raise KernelError(errno.ERANGE, f"Numerical result out of range: {text!r}")
    return value


def sysfs_choice(text: str, choices: tuple[str, ...]) -> str:
    """sysfs_streq against each choice: exact, case-sensitive, one trailing newline allowed."""
    body = text[:-1] if text.endswith("\n") else text
    if body not in choices:
        raise _einval(text)
    return body


def bracketed(current: str, choices: tuple[str, ...]) -> str:
    """What a choice file shows: every choice, the active one in brackets."""
    return " ".join(f"[{c}]" if c == current else c for c in choices) + "\n"


def kstrtobool(text: str) -> str:
    """param_set_bool: y/Y/1/on -> Y, n/N/0/off -> N (what /sys/module/*/parameters shows)."""
    t = text.strip()
    if t[:1] in ("y", "Y", "1") or t.lower() == "on":
        return "Y"
    if t[:1] in ("n", "N", "0") or t.lower() == "off":
        return "N"
    raise _einval(text)


def parse_cpulist(text: str, ncpus: int) -> set[int]:
    """bitmap_parselist: "0-3,8,10-15"; a CPU at or beyond ncpus is ERANGE, anything malformed EINVAL."""
    body = text.strip()
    cpus: set[int] = set()
    if not body:
        return cpus
    for item in body.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+)/(\d+))?)?", item.strip())
        if not m:
            raise _einval(text)
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) is not None else start
        used, group = (int(m.group(3)), int(m.group(4))) if m.group(3) is not None else (1, 1)
        if end < start or not 0 < used <= group:
            raise _einval(text)
        if end >= ncpus:
            raise KernelError(errno.ERANGE, f"Numerical result out of range: {text!r}")
        cpus.update(c for c in range(start, end + 1) if (c - start) % group < used)
    return cpus


def format_cpulist(cpus: set[int]) -> str:
    """The inverse, as %*pbl prints it: ascending ranges joined by commas."""
    out: list[str] = []
    ordered = sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_cpumask(text: str, ncpus: int) -> set[int]:
    """bitmap_parse: comma-separated 32-bit hex groups, most significant first; a bit at or beyond ncpus is
    EOVERFLOW."""
    body = text.strip()
    if not body or not re.fullmatch(r"[0-9a-fA-F]{1,8}(,[0-9a-fA-F]{1,8})*", body):
        raise _einval(text)
    value = 0
    for group in body.split(","):
        value = (value << 32) | int(group, 16)
    if value >> ncpus:
        raise KernelError(errno.EOVERFLOW, f"Value too large for defined data type: {text!r}")
    return {bit for bit in range(ncpus) if value >> bit & 1}


def format_cpumask(cpus: set[int], ncpus: int) -> str:
    """%*pb: ceil(ncpus / 32) groups of 8 hex digits, most significant first (a partial top group is
    printed with only as many digits as it has bits, like the kernel does)."""
    value = sum(1 << c for c in cpus)
    groups = []
    for g in range((ncpus + 31) // 32):
        bits = min(32, ncpus - 32 * g)
        groups.append(f"{(value >> (32 * g)) & ((1 << bits) - 1):0{(bits + 3) // 4}x}")
    return ",".join(reversed(groups))


def first_word(text: str, limit: int = 15) -> str:
    """sscanf(buf, "%15s"): the first blank-delimited word, at most `limit` characters."""
    words = text.split()
    if not words:
        raise _einval(text)
    return words[0][:limit]
