"""The test controller's AnsiballZ payload cache (tests/pythonpath/ascend_testbed_ansiballz.py): one folder
per module bytes and module_utils state, ansible's own lookup inside it, and really reused by a second
ansible process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

HOOKS = Path(__file__).resolve().parents[1] / "pythonpath"
sys.path.insert(0, str(HOOKS))
import ascend_testbed_ansiballz as hook  # noqa: E402


def fake_module_common(seen: list[str]) -> ModuleType:
    module = ModuleType("fake_module_common")
    module.C = SimpleNamespace(DEFAULT_LOCAL_TMP="/tmp/ansible-local-1", OTHER=7)  # type: ignore[attr-defined]

    def find(**kwargs: Any) -> str:
        seen.append(module.C.DEFAULT_LOCAL_TMP)  # type: ignore[attr-defined]
        return "payload"

    module._find_module_utils = find  # type: ignore[attr-defined]
    return module


def test_one_folder_per_module_bytes_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook, "environment_key", lambda: "core:bundle:utils")
    seen: list[str] = []
    module = fake_module_common(seen)
    hook.patch(module, tmp_path)
    call = module._find_module_utils  # type: ignore[attr-defined]
    assert call(module_path="/c/m.py", b_module_data=b"a") == "payload"
    call(module_path="/c/m.py", b_module_data=b"a")
    call(module_path="/c/m.py", b_module_data=b"b")
    call(module_path="/c/n.py", b_module_data=b"a")
    assert seen[0] == seen[1]
    assert len(set(seen)) == 3
    assert all(Path(p).parent == tmp_path for p in seen)
    # outside a payload build, module_common sees ansible's own constants
    assert module.C.DEFAULT_LOCAL_TMP == "/tmp/ansible-local-1"  # type: ignore[attr-defined]
    assert module.C.OTHER == 7  # type: ignore[attr-defined]


def test_module_utils_change_changes_the_key(tmp_path: Path) -> None:
    utils = tmp_path / "ansible_collections/acme/x/plugins/module_utils"
    utils.mkdir(parents=True)
    (utils / "common.py").write_text("A = 1\n")
    before = hook.tree_fingerprint([tmp_path])
    assert hook.tree_fingerprint([tmp_path]) == before
    (utils / "common.py").write_text("A = 22\n")
    assert hook.tree_fingerprint([tmp_path]) != before
    (utils / "new.py").write_text("")
    assert len({before, hook.tree_fingerprint([tmp_path])}) == 2


def test_off_unless_a_folder_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("", "0"):
        monkeypatch.setenv(hook.ENV, value)
        assert hook.cache_root() is None
    monkeypatch.setenv(hook.ENV, "/var/tmp/x")
    assert hook.cache_root() == Path("/var/tmp/x")


def run_ping(cache: str, workdir: Path) -> None:
    """`ansible localhost -m ping` in workdir (its own ANSIBLE_LOCAL_TEMP there), the cache set to cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        PYTHONPATH=str(HOOKS), ASCEND_TESTBED_ANSIBALLZ_CACHE=cache, ANSIBLE_LOCAL_TEMP=str(workdir / "lt")
    )
    adhoc = Path(sys.executable).parent / "ansible"
    workdir.mkdir(exist_ok=True)
    done = subprocess.run(
        [
            str(adhoc),
            "localhost",
            "-c",
            "local",
            "-m",
            "ansible.builtin.ping",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
        ],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_second_ansible_process_reuses_the_payload(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_ping(str(cache), tmp_path / "on")
    payloads = [p for p in cache.rglob("ansible.modules.ping-*") if not p.name.endswith(".lock")]
    assert len(payloads) == 1, sorted(cache.rglob("*"))
    first = payloads[0].stat()
    run_ping(str(cache), tmp_path / "on")
    again = payloads[0].stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)  # read, not rebuilt
    # off: ansible builds in its per-process folder, removed at exit; nothing is kept anywhere
    off = tmp_path / "off"
    run_ping("0", off)
    assert not [p for p in off.rglob("*") if "ping" in p.name], sorted(off.rglob("*"))
