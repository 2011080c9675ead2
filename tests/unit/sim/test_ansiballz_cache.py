"""The simulated servers' byte-code cache for AnsiballZ payloads (ascend_sim_ansiballz_cache, loaded by a .pth
in the server image): a payload zip's module is compiled once and reused from another run's zip; a changed
source, an archive that is not a payload and a corrupt cache entry all compile again. Driven through
CPython's own zipimport, the way a module run imports it."""

from __future__ import annotations

import importlib
import sys
import zipfile
import zipimport
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ascend_sim_ansiballz_cache as cache
import pytest


@pytest.fixture
def compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The cache under tmp_path, installed into zipimport; yields the paths zipimport really compiled."""
    seen: list[str] = []
    real = cache._compile

    def counting(pathname: str, source: bytes) -> Any:
        seen.append(pathname)
        return real(pathname, source)

    monkeypatch.setattr(cache, "CACHE_DIR", str(tmp_path / "code"))
    monkeypatch.setattr(cache, "_compile", counting)
    monkeypatch.setattr(zipimport, "_compile_source", cache.compile_source)
    yield seen
    for name in [m for m in sys.modules if m.startswith("simpayload")]:
        del sys.modules[name]


def run_from_zip(zip_path: Path, source: str) -> Any:
    """Import simpayload.mod from a fresh zip (as a module run does: a new archive every time)."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w") as z:
        z.writestr("simpayload/__init__.py", "")
        z.writestr("simpayload/mod.py", source)
    for name in [m for m in sys.modules if m.startswith("simpayload")]:
        del sys.modules[name]
    sys.path.insert(0, str(zip_path))
    try:
        importlib.invalidate_caches()
        return importlib.import_module("simpayload.mod").VALUE
    finally:
        sys.path.remove(str(zip_path))
        sys.path_importer_cache.pop(str(zip_path), None)


def test_a_payload_module_is_compiled_once_and_reused_from_another_runs_zip(
    tmp_path: Path, compiles: list[str]
) -> None:
    assert run_from_zip(tmp_path / "run1" / "ansible_stat_payload.zip", "VALUE = 6 * 7\n") == 42
    assert [Path(p).name for p in compiles] == ["__init__.py", "mod.py"]
    assert len(list((tmp_path / "code").iterdir())) == 2
    compiles.clear()
    assert run_from_zip(tmp_path / "run2" / "ansible_stat_payload.zip", "VALUE = 6 * 7\n") == 42
    assert compiles == []  # both read from the cache, from an archive at another path


def test_a_changed_source_compiles_again_and_runs_the_new_code(tmp_path: Path, compiles: list[str]) -> None:
    run_from_zip(tmp_path / "a" / "ansible_x_payload.zip", "VALUE = 1\n")
    compiles.clear()
    assert run_from_zip(tmp_path / "b" / "ansible_x_payload.zip", "VALUE = 2\n") == 2
    assert [Path(p).name for p in compiles] == ["mod.py"]


def test_other_archives_are_never_cached(tmp_path: Path, compiles: list[str]) -> None:
    for run in ("a", "b"):
        assert run_from_zip(tmp_path / run / "library.zip", "VALUE = 3\n") == 3
    # every file of both runs compiled (zipimport may compile a file more than once per import)
    assert {str(Path(p).relative_to(tmp_path)) for p in compiles} == {
        f"{run}/library.zip/simpayload/{name}" for run in ("a", "b") for name in ("__init__.py", "mod.py")
    }
    assert not (tmp_path / "code").exists()


def test_a_corrupt_entry_is_compiled_again_and_replaced(tmp_path: Path, compiles: list[str]) -> None:
    run_from_zip(tmp_path / "a" / "ansible_y_payload.zip", "VALUE = 5\n")
    for entry in (tmp_path / "code").iterdir():
        entry.write_bytes(b"not marshal data")
    compiles.clear()
    assert run_from_zip(tmp_path / "b" / "ansible_y_payload.zip", "VALUE = 5\n") == 5
    assert {Path(p).name for p in compiles} == {"__init__.py", "mod.py"}
    compiles.clear()
    assert run_from_zip(tmp_path / "c" / "ansible_y_payload.zip", "VALUE = 5\n") == 5
    assert compiles == []
