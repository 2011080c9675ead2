"""AnsiballZ payloads kept across ansible-playbook runs on the test controller (a test-bed speed-up only).

Before a task runs a Python module, ansible-core builds its payload: a zip of the module and every
`module_utils` file it imports, found by parsing their sources (`recursive_finder` in
ansible/executor/module_common.py). Ansible keeps a built payload under its per-process temporary folder
(`DEFAULT_LOCAL_TMP/ansiballz_cache`), so each ansible-playbook builds every module it uses again, and the
test suite runs thousands of them: building payloads was 49 % of ansible-playbook's CPU in a py-spy profile
of a host-layer plan; with this hook, the plan's controller CPU fell by about a third (see
benchmarks/README.md).

This module, imported at interpreter start by the sitecustomize.py beside it (tests/conftest.py puts this
folder on the PYTHONPATH of the test processes when ASCEND_TESTBED_ANSIBALLZ_CACHE is not 0), points that
lookup at a folder that outlives the process, one folder per key:

- the module: its path and its bytes;
- ansible-core's version, and the version of the `ansible` package that bundles the collections;
- the `module_utils` files of every collection path outside site-packages (the checkout's own
  ascend.npu): path, size and modification time.

Ansible names the cached file by the module's name, compression and extensions, as it does within one run,
and still takes its file lock while building. The payload is what ansible-core builds, byte for byte except
the zip's timestamps; the module runs exactly as before. The product never loads this: it is on no path of
an installed orchestrator, and ASCEND_TESTBED_ANSIBALLZ_CACHE=0 turns it off in the tests.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ENV = "ASCEND_TESTBED_ANSIBALLZ_CACHE"
TARGET = "ansible.executor.module_common"
_module_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("ascend_ansiballz_key", default=None)


def cache_root() -> Path | None:
    """The folder named by ASCEND_TESTBED_ANSIBALLZ_CACHE, or None (unset, empty or 0: off)."""
    value = os.environ.get(ENV, "")
    return None if value in ("", "0") else Path(value)


def tree_fingerprint(roots: Iterable[Path]) -> str:
    """Path, size and mtime of every file under each root's ansible_collections/*/*/plugins/module_utils."""
    h = hashlib.sha256()
    for root in sorted(roots):
        for utils in sorted(root.glob("ansible_collections/*/*/plugins/module_utils")):
            for path in sorted(p for p in utils.rglob("*") if p.is_file()):
                st = path.stat()
                h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def module_key(module_path: str, module_data: bytes, environment_key: str) -> str:
    h = hashlib.sha256(environment_key.encode())
    h.update(b"\0" + module_path.encode("utf-8", "surrogateescape") + b"\0")
    h.update(module_data)
    return h.hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def environment_key() -> str:
    """ansible-core and ansible versions, and the module_utils of collection paths outside site-packages."""
    from importlib import metadata

    import ansible.constants as C

    try:
        bundle = metadata.version("ansible")
    except metadata.PackageNotFoundError:
        bundle = "-"
    site = {Path(p).resolve() for p in sys.path if p.endswith("-packages")}
    paths = [Path(p).resolve() for p in (C.COLLECTIONS_PATHS or [])]
    local = [p for p in paths if p.is_dir() and not any(p == s or s in p.parents for s in site)]
    from ansible import release

    return f"{release.__version__}:{bundle}:{tree_fingerprint(local)}"


class _Constants:
    """ansible.constants as module_common sees it, with DEFAULT_LOCAL_TMP pointing at the key's folder
    while a payload is being built."""

    def __init__(self, real: Any, root: Path) -> None:
        self._real = real
        self._root = root

    def __getattr__(self, name: str) -> Any:
        key = _module_key.get()
        if name == "DEFAULT_LOCAL_TMP" and key is not None:
            return str(self._root / key)
        return getattr(self._real, name)


def patch(module: ModuleType, root: Path) -> None:
    """Make module_common's payload cache persistent under root (module: ansible.executor.module_common)."""
    find: Callable[..., Any] = module._find_module_utils

    @functools.wraps(find)
    def find_module_utils(**kwargs: Any) -> Any:
        key = module_key(str(kwargs["module_path"]), bytes(kwargs["b_module_data"]), environment_key())
        token = _module_key.set(key)
        try:
            return find(**kwargs)
        finally:
            _module_key.reset(token)

    module.C = _Constants(module.C, root)
    module._find_module_utils = find_module_utils
    environment_key()  # here, in ansible-playbook's main process: its forked workers inherit the result


class _Finder(importlib.abc.MetaPathFinder):
    """Patches module_common right after it is first executed (whoever imports it first)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        execute = loader.exec_module
        root = self._root

        def exec_module(module: ModuleType) -> None:
            execute(module)
            patch(module, root)

        loader.exec_module = exec_module
        return spec


def install() -> bool:
    """Hook module_common's import when the cache is on; True when hooked."""
    root = cache_root()
    if root is None or TARGET in sys.modules:
        return False
    sys.meta_path.insert(0, _Finder(root))
    return True
