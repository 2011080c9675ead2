"""YAML loading: positions of keys, values and list items; duplicate keys; syntax errors; odd files."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.pipeline import validate_file, validate_text
from orchestrator.spec.findings import Finding, Position, error, format_finding, format_path, sort_findings
from orchestrator.spec.loader import Document, SourceMap, load_file, parse_text
from tests.helpers import PATIENCE_S

ROOT = Path(__file__).resolve().parents[2]

TEXT = """\
site: lab
servers:
  - name: a2-01
    address: 10.0.0.1
    roles: [npu, build]
  - {name: a2-02, address: 10.0.0.2}
serving:
  parallelism: {tp: 4, dp: 2}
  max_model_len: 8192
  extra_args:
    - --enable-prefix-caching
    - --seed
tuning:
  sysctls:
    vm.swappiness: 0
  transparent_hugepages: always
"""
LINES = TEXT.splitlines()


def at(line: int, token: str, nth: int = 1) -> Position:
    """Position of the nth occurrence of token on a 1-based line of TEXT."""
    col = -1
    for _ in range(nth):
        col = LINES[line - 1].index(token, col + 1)
    return Position(line, col + 1)


def _parse(text: str, filename: str = "site.yaml") -> Document:
    doc, findings = parse_text(text, filename)
    assert findings == [] and doc is not None
    return doc


def _fail(text: str) -> Finding:
    doc, findings = parse_text(text, "site.yaml")
    assert doc is None
    assert len(findings) == 1
    return findings[0]


def _path_id(value: object) -> str | None:
    return format_path(value) if isinstance(value, tuple) else None


@pytest.fixture(scope="module")
def smap() -> SourceMap:
    return _parse(TEXT).source_map


# ------------------------------------------------------------------------------------------- positions


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("site",), at(1, "lab")),
        (("servers", 0, "name"), at(3, "a2-01")),
        (("servers", 0, "address"), at(4, "10.0.0.1")),
        (("servers", 1, "address"), at(6, "10.0.0.2")),
        (("serving", "parallelism", "tp"), at(8, "4")),
        (("serving", "parallelism", "dp"), at(8, "2")),
        (("serving", "max_model_len"), at(9, "8192")),
        (("tuning", "sysctls", "vm.swappiness"), at(15, "0")),
        (("tuning", "transparent_hugepages"), at(16, "always")),
    ],
    ids=_path_id,
)
def test_locate_scalar_values(smap: SourceMap, path: tuple[str | int, ...], expected: Position) -> None:
    assert smap.locate(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("servers", 0), at(3, "name")),  # a block mapping item starts at its first key
        (("servers", 1), at(6, "{")),  # a flow mapping item starts at its brace
        (("servers", 0, "roles", 0), at(5, "npu")),
        (("servers", 0, "roles", 1), at(5, "build")),
        (("serving", "extra_args", 0), at(11, "--enable")),
        (("serving", "extra_args", 1), at(12, "--seed")),
    ],
    ids=_path_id,
)
def test_locate_list_items(smap: SourceMap, path: tuple[str | int, ...], expected: Position) -> None:
    assert smap.locate(path) == expected


def test_locate_collections_point_at_their_content(smap: SourceMap) -> None:
    assert smap.locate(("serving", "parallelism")) == at(8, "{")
    assert smap.locate(("servers",)) == at(3, "-")
    assert smap.locate(("serving",)) == at(8, "parallelism")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("site",), at(1, "site")),
        (("serving",), at(7, "serving")),
        (("serving", "max_model_len"), at(9, "max_model_len")),
        (("servers", 0, "address"), at(4, "address")),
        (("servers", 1, "address"), at(6, "address")),
        (("serving", "parallelism", "dp"), at(8, "dp")),
        (("tuning", "sysctls", "vm.swappiness"), at(15, "vm.swappiness")),
    ],
    ids=_path_id,
)
def test_locate_key(smap: SourceMap, path: tuple[str | int, ...], expected: Position) -> None:
    assert smap.locate_key(path) == expected


def test_missing_paths_fall_back_to_the_deepest_existing_parent(smap: SourceMap) -> None:
    assert smap.locate(("serving", "max_num_seqs")) == smap.locate(("serving",))
    assert smap.locate(("servers", 5, "name")) == smap.locate(("servers",))
    assert smap.locate(("servers", 0, "overrides", "sysctls")) == smap.locate(("servers", 0))
    assert smap.locate(("site", "nested")) == smap.locate(("site",))  # a scalar has no children
    assert smap.locate(("servers", "name")) == smap.locate(("servers",))  # a string index into a list
    assert smap.locate_key(("serving", "max_num_seqs")) == smap.locate(("serving",))
    assert smap.locate_key(("servers", 0)) == smap.locate(("servers", 0))


def test_document_and_unknown_top_level_keys_are_at_the_start(smap: SourceMap) -> None:
    assert smap.locate(()) == Position(1, 1)
    assert smap.locate_key(()) == Position(1, 1)
    assert smap.locate(("network",)) == Position(1, 1)


def test_positions_count_comment_lines() -> None:
    doc = _parse("# header\n# more\n\nsite: lab\nserving:\n  port: 8000\n")
    assert doc.source_map.locate(("serving", "port")) == Position(6, 9)
    assert doc.source_map.locate_key(("serving", "port")) == Position(6, 3)


# ------------------------------------------------------------------------------------------ documents


def test_document_keeps_name_text_and_digest() -> None:
    doc = _parse(TEXT, "inventories/lab/site.yaml")
    assert doc.filename == "inventories/lab/site.yaml"
    assert doc.text == TEXT
    assert doc.sha256 == hashlib.sha256(TEXT.encode()).hexdigest()


def test_data_is_plain_python() -> None:
    doc = _parse(
        'a: {flag: true, off: false, n: 3, f: 0.5, q: "22.04", v: 22.04, none: null, d: 2025-09-03}\n'
        "8000: port\nlist: [1, two, [3]]\n"
    )
    data = doc.data
    assert type(data) is dict and type(data["list"]) is list and type(data["a"]) is dict
    assert data["a"]["flag"] is True and data["a"]["off"] is False
    assert type(data["a"]["n"]) is int and data["a"]["n"] == 3
    assert type(data["a"]["f"]) is float and data["a"]["f"] == 0.5
    assert data["a"]["q"] == "22.04" and type(data["a"]["q"]) is str
    assert data["a"]["v"] == 22.04
    assert data["a"]["none"] is None
    assert data["a"]["d"] == "2025-09-03"
    assert data["8000"] == "port"  # keys are always strings
    assert data["list"] == [1, "two", [3]]


def test_yaml_1_2_reads_yes_and_underscored_numbers_its_own_way() -> None:
    data = _parse("a: yes\nb: 910_93\nc: 0x10\n").data
    assert data["a"] == "yes"  # YAML 1.2: not a boolean
    assert data["b"] == 91093  # why an unquoted chip 910_93 is rejected
    assert data["c"] == 16


# ----------------------------------------------------------------------------------------- duplicates


@pytest.mark.parametrize(
    ("text", "key", "position"),
    [
        ("serving:\n  max_num_seqs: 16\n  port: 8000\n  max_num_seqs: 32\n", "max_num_seqs", Position(4, 3)),
        ("site: a\nsite: b\n", "site", Position(2, 1)),
        ("serving:\n  parallelism: {tp: 4, tp: 8}\n", "tp", Position(2, 24)),
        ("servers:\n  - name: a\n    address: 10.0.0.1\n    name: b\n", "name", Position(4, 5)),
    ],
)
def test_duplicate_keys_point_at_the_second_key(text: str, key: str, position: Position) -> None:
    f = _fail(text)
    assert f.is_error and f.code == "yaml" and f.path == ()
    assert f.position == position
    assert f'duplicate key "{key}"' in f.message
    assert f.fix == "remove or rename one of the two keys"


def test_duplicate_key_does_not_echo_secret_values() -> None:
    f = _fail("serving:\n  api_key: sk-live-123\n  port: 8000\n  api_key: sk-live-456\n")
    assert f.position == Position(4, 3)
    assert 'duplicate key "api_key"' in f.message
    text = format_finding(f, "site.yaml")
    assert "sk-live-123" not in text
    assert "sk-live-456" not in text


@pytest.mark.parametrize("text", ["- site: a\n- site: b\n", "just a sentence\n", "42\n", "[1, 2]\n"])
def test_non_mapping_document_is_one_error(text: str) -> None:
    f = _fail(text)
    assert f.is_error and f.path == () and f.position == Position(1, 1)
    assert "must be a YAML mapping" in f.message
    assert f.fix is not None and "site:" in f.fix


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing here yet\n# still nothing\n", "---\n"])
def test_empty_file_is_an_empty_mapping(text: str) -> None:
    doc = _parse(text)
    assert doc.data == {}
    assert doc.source_map.locate(("site",)) == Position(1, 1)


def test_empty_file_is_one_finding_that_points_at_the_examples() -> None:
    result = validate_text("# todo\n", "site.yaml")
    assert not result.ok and result.plan is None
    (f,) = result.errors
    assert f.message == "the spec is empty" and "inventories/" in (f.fix or "")
    assert f.position == Position(1, 1)


def test_validate_text_stops_at_syntax_errors() -> None:
    result = validate_text("site: [a\n", "bad.yaml")
    assert not result.ok
    assert result.document is None and result.spec is None and result.plan is None
    assert [f.code for f in result.findings] == ["yaml"]
    assert result.filename == "bad.yaml"


# --------------------------------------------------------------------------------------------- files


def test_load_file_reads_utf8(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("site: lab  # Zürich\n", encoding="utf-8")
    doc, findings = load_file(path)
    assert findings == [] and doc is not None
    assert doc.filename == str(path)
    assert doc.data == {"site": "lab"}


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "site.yaml"
    doc, findings = load_file(path)
    assert doc is None
    [f] = findings
    assert f.is_error and f.code == "io" and f.position is None
    assert f.message == f"no such file: {path}"
    assert format_finding(f, str(path)).startswith(f"{path}: error: (document): no such file")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    doc, findings = load_file(tmp_path)
    assert doc is None
    [f] = findings
    assert f.code == "io" and f.message.startswith(f"cannot read {tmp_path}")


def test_file_that_is_not_utf8_is_reported_at_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_bytes(b"# ok\nsite: caf\xe9\n")
    doc, findings = load_file(path)
    assert doc is None
    [f] = findings
    assert f.code == "io" and f.position is None
    assert "not UTF-8" in f.message and "byte 0xE9 at byte offset 14 (line 2)" in f.message
    assert f.fix is not None and "save the file as UTF-8" in f.fix


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("site: lab\n", encoding="utf-8")
    original = Path.open

    def denied(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    result = validate_file(path)
    assert not result.ok and result.document is None
    [f] = result.findings
    assert f.code == "io" and "Permission denied" in f.message


def test_cli_on_a_missing_file_names_the_paths_it_tried(tmp_path: Path) -> None:
    missing = tmp_path / "site.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "validate", str(missing)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )
    assert proc.returncode == 66
    assert f"no site spec at '{missing}'" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


# ------------------------------------------------------------------------------------------ findings


def test_format_path() -> None:
    assert format_path(()) == "(document)"
    assert format_path(("serving", "replicas", 0, "servers", 1)) == "serving.replicas[0].servers[1]"
    assert format_path(("tuning", "sysctls", "vm.swappiness")) == 'tuning.sysctls["vm.swappiness"]'
    assert format_path(("profiles", "atlas-800t-a2", "chip")) == "profiles.atlas-800t-a2.chip"
    assert format_path(("serving", "env", "HF_TOKEN")) == "serving.env.HF_TOKEN"


def test_format_finding_with_and_without_fix() -> None:
    f = error(("serving", "port"), "port clash", "use 8001").at(Position(3, 5))
    assert format_finding(f, "s.yaml") == "s.yaml:3:5: error: serving.port: port clash\n    fix: use 8001"
    assert format_finding(error((), "bad"), "s.yaml") == "s.yaml: error: (document): bad"


def test_sort_findings_errors_first_then_position() -> None:
    w1 = Finding("warning", ("a",), "w1", position=Position(1, 1))
    e1 = Finding("error", ("b",), "e1", position=Position(9, 3))
    e2 = Finding("error", ("c",), "e2", position=Position(2, 7))
    e3 = Finding("error", ("d",), "e3", position=Position(2, 1))
    e0 = Finding("error", (), "e0")
    assert [f.message for f in sort_findings([w1, e1, e2, e3, e0])] == ["e0", "e3", "e2", "e1", "w1"]
