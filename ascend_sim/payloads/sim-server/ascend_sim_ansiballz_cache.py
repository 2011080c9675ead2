"""Byte code of Ansible modules kept across module runs on a simulated server (a test-bed speed-up only).

Every Ansible task runs its module as a fresh `python3` that imports the module and
`ansible.module_utils` from the AnsiballZ payload zip the controller sends. Python's zipimport compiles
every imported source file each time (it never writes byte code into a zip), and that compile is about a
third of a module run's CPU time here: 0.20 CPU-s for `ansible.builtin.stat` without this, 0.14 with it
(Python 3.11, bookworm, measured in a simulated server).

This module, loaded at interpreter start by ascend_sim_ansiballz_cache.pth (site-packages), wraps
zipimport's compile step for payload zips only (archives named ansible_*): the code object of a source is
stored under a key of its path inside the zip and its bytes, and reused by later runs. The module's
behaviour is unchanged (the same source gives the same code object); only tracebacks may name the temporary
zip of the run that compiled it. Nothing else is touched: other zips and every ordinary import compile as
before. The product never installs this; real servers run stock Python.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import zipimport
from types import CodeType
from typing import Any

CACHE_DIR = "/var/cache/ascend-sim/ansiballz-code"
_compile: Any = zipimport._compile_source  # type: ignore[attr-defined]  # CPython 3.11's zipimport


def _key(inner: str, source: bytes) -> str:
    h = hashlib.sha256(inner.encode("utf-8", "surrogateescape"))
    h.update(b"\0")
    h.update(source)
    return h.hexdigest()


def compile_source(pathname: str, source: bytes) -> CodeType:
    """zipimport._compile_source, with the code of AnsiballZ payloads read from and written to CACHE_DIR."""
    archive, sep, inner = pathname.partition(".zip" + os.sep)
    if not sep or not os.path.basename(archive).startswith("ansible_"):
        return _compile(pathname, source)  # type: ignore[no-any-return]
    path = os.path.join(CACHE_DIR, _key(inner, source))
    try:
        with open(path, "rb") as f:
            code = marshal.load(f)
        if isinstance(code, CodeType):
            return code
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = _compile(pathname, source)
    try:
        os.makedirs(CACHE_DIR, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            marshal.dump(code, f)
        os.replace(tmp, path)  # atomic: a concurrent run reads the old file or the whole new one
    except OSError:
        pass
    return code  # type: ignore[no-any-return]


def install() -> None:
    zipimport._compile_source = compile_source  # type: ignore[attr-defined]


if os.environ.get("ASCEND_SIM_ANSIBALLZ_CACHE", "1") != "0":
    install()
