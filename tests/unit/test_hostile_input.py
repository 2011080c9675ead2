"""Hostile and odd input: every case ends fast with exit 2, a located message and a fix, in bounded memory
(aliases, size, nesting, encodings, keys and tags; numbers, merge keys and large sites have their own files).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.pipeline import validate_bytes, validate_file, validate_text
from orchestrator.spec.findings import Position, format_finding
from orchestrator.spec.limits import LoadLimits
from orchestrator.spec.loader import load_file, parse_text
from tests.helpers import PATIENCE_S, ROOT, cpu_seconds_at_most, load_example, to_yaml
from tests.hostile import assert_refused, cli, only_error, startup_cpu


@pytest.fixture(scope="module")
def startup_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    return startup_cpu(tmp_path_factory.mktemp("startup"))


# ------------------------------------------------------------------------------------ alias bombs


def billion_laughs(levels: int = 9, fanout: int = 9) -> str:
    lines = ["site: lab", "profiles:", f"  a0: &a0 [{','.join(['lol'] * fanout)}]"]
    for i in range(1, levels + 1):
        lines.append(f"  a{i}: &a{i} [{','.join([f'*a{i - 1}'] * fanout)}]")
    lines.append(f"servers: *a{levels}")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_fast_at_the_alias(tmp_path: Path, startup_s: float) -> None:
    text = billion_laughs()
    assert len(text) < 600  # a few hundred bytes
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    err = assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:13:10", "YAML aliases expand")
    assert "billion laughs" in err
    # nodes of *a(i), expanded: a0 is a list of 9 scalars (10 nodes); a(i) is a list of 9 copies of a(i-1)
    size = 10
    for _ in range(9):
        size = 1 + 9 * size
    assert f"*a9 here alone adds {size:,}" in err


def test_one_large_anchor_used_many_times_is_refused(tmp_path: Path, startup_s: float) -> None:
    """Not exponential, only quadratic: 20,000 items, referenced 2,000 times (about 80 KB of text)."""
    items = ", ".join(["x"] * 20_000)
    uses = "\n".join("  - *big" for _ in range(2_000))
    spec = tmp_path / "site.yaml"
    spec.write_text(f"site: lab\nlabels: &big [{items}]\nservers:\n{uses}\n", encoding="utf-8")
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:4:5", "YAML aliases expand")


def test_alias_expansion_limit_counts_nested_aliases_once_per_use() -> None:
    text = billion_laughs(levels=3, fanout=3)  # 1 + 3 + 9 + 27 lists + 27*9 lols: well under the limit
    doc, findings = parse_text(text, "s.yaml")
    assert findings == [] and doc is not None
    assert len(doc.data["servers"]) == 3 and doc.data["servers"][0][0][0][0] == "lol"
    doc, findings = parse_text(text, "s.yaml", LoadLimits(alias_nodes=100))
    assert doc is None and findings[0].code == "limit"


def test_recursive_and_undefined_aliases_are_located_errors() -> None:
    f = only_error(validate_text("site: lab\nservers: &s\n  - *s\n"))
    assert f.position == Position(3, 5) and "recursive" in f.message
    f = only_error(validate_text("site: lab\nservers: *nope\n"))
    assert f.position == Position(2, 10) and "*nope" in f.message and f.fix == "define &nope above this line"


def test_aliases_within_the_limit_work_and_locate_inside_the_anchor() -> None:
    text = to_yaml(load_example("a2-fleet-gateway"))
    profiles = "profiles:\n  atlas-800t-a2:\n    cards: 8\n    chip: 910B3\n"
    assert profiles in text
    text = text.replace(
        profiles, "profiles:\n  atlas-800t-a2: &a2\n    cards: 9\n    chip: 910B3\n  spare: *a2\n"
    )
    lines = text.splitlines()
    result = validate_text(text)
    cards = {f.path: f.position for f in result.errors if f.path[-1:] == ("cards",)}
    written = Position(lines.index("    cards: 9") + 1, 12)
    assert cards == {("profiles", "atlas-800t-a2", "cards"): written, ("profiles", "spare", "cards"): written}
    doc, _ = parse_text(text, "s.yaml")
    assert doc is not None and doc.source_map.locate(("profiles", "spare")) == Position(
        lines.index("  spare: *a2") + 1, 10
    )


# --------------------------------------------------------------------------------------- file size


def test_a_50_mb_file_is_refused_without_reading_it(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    line = b"  - {name: s1, address: 10.0.0.1}\n"
    with spec.open("wb") as fh:
        fh.write(b"site: lab\nservers:\n")
        fh.write(line * (50 * 2**20 // len(line)))
    err = assert_refused(cli("validate", str(spec)), startup_s, f"{spec}", "more than the 16 MiB")
    assert "--max-spec-size" in err and "ORCHESTRATOR_MAX_SPEC_SIZE" in err


@pytest.mark.parametrize("command", ["validate", "render", "phases"])
def test_max_spec_size_flag_and_environment(tmp_path: Path, command: str) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(to_yaml(load_example("a2-single-distill")), encoding="utf-8")
    small = subprocess.run(
        [sys.executable, "-m", "orchestrator", command, str(spec), "--max-spec-size", "1KiB"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )
    assert small.returncode == 2 and "more than the 1 KiB" in small.stderr
    env = {**os.environ, "ORCHESTRATOR_MAX_SPEC_SIZE": "1k"}
    by_env = subprocess.run(
        [sys.executable, "-m", "orchestrator", command, str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
        env=env,
    )
    assert by_env.returncode == 2 and "more than the 1 KiB" in by_env.stderr
    raised = subprocess.run(
        [sys.executable, "-m", "orchestrator", command, str(spec), "--max-spec-size", "64MiB"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
        env=env,
    )
    assert raised.returncode == 0, raised.stderr


def test_an_endless_stream_is_read_only_up_to_the_limit() -> None:
    doc, findings = load_file(Path("/dev/zero"), LoadLimits(max_bytes=4096))
    assert doc is None and findings[0].code == "limit"
    assert "at least" in findings[0].message and "4 KiB" in findings[0].message


# ----------------------------------------------------------------------------------------- nesting


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # the 65th level: the '[' at column 7 + 63 of line 1; the key 'k63' at line 64, column 2 * 63 + 1
        ("site: " + "[" * 100_000 + "]" * 100_000 + "\n", "1:70"),
        ("".join("  " * i + f"k{i}:\n" for i in range(200)), "64:127"),
    ],
    ids=["flow", "block"],
)
def test_deep_nesting_is_refused_at_the_limit(
    tmp_path: Path, startup_s: float, text: str, where: str
) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:{where}", "nests deeper than 64 levels")


def test_nesting_through_aliases_counts_the_anchored_depth() -> None:
    anchored = "[" * 40 + "1" + "]" * 40  # 43 levels deep where it is written: fine
    used = "[" * 27 + "*d" + "]" * 27  # 2 + 27 levels, plus the 41 of *d: too deep
    f = only_error(validate_text(f"site: lab\nprofiles: {{a: &d {anchored}}}\nservers: {used}\n"))
    assert "nests deeper" in f.message and f.position == Position(3, 37)


# ------------------------------------------------------------------------------------ not text


def test_binary_file_is_reported_at_a_byte_offset(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + bytes(range(256)) * 40)
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}", "binary", "NUL byte at byte offset 7")


@pytest.mark.parametrize(
    ("encoding", "needle"),
    [
        ("utf-16", "UTF-16 text (byte order mark FF FE at byte offset 0)"),
        ("utf-16-le", "UTF-16LE text without a byte order mark (NUL byte at byte offset 1)"),
        ("utf-16-be", "UTF-16BE text without a byte order mark (NUL byte at byte offset 0)"),
        ("utf-32", "UTF-32 text (byte order mark FF FE 00 00 at byte offset 0)"),
    ],
)
def test_utf16_and_utf32_files_are_reported_at_a_byte_offset(
    tmp_path: Path, startup_s: float, encoding: str, needle: str
) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_bytes(to_yaml(load_example("a2-single-distill")).encode(encoding))
    err = assert_refused(cli("validate", str(spec)), startup_s, f"{spec}", needle)
    assert "iconv" in err


def test_invalid_utf8_and_control_characters() -> None:
    f = only_error(validate_bytes(b"site: lab\nos: {distro: \xff}\n"))
    assert f.position is None and "byte 0xFF at byte offset 23 (line 2)" in f.message
    f = only_error(validate_text("site: lab\nos: {distro: u\x07}\n"))
    assert f.position == Position(2, 15) and "U+0007" in f.message and "byte offset 24" in f.message
    doc, findings = parse_text("\ufeffsite: lab\n", "s.yaml")  # a UTF-8 byte order mark is fine
    assert findings == [] and doc is not None and doc.data == {"site": "lab"}
    assert validate_bytes(b"\xef\xbb\xbfsite: lab\n").errors[0].code == "missing"


# ------------------------------------------------------------------------------------- keys, tags


def test_null_key_is_reported_at_its_own_line(tmp_path: Path, startup_s: float) -> None:
    spec = tmp_path / "site.yaml"
    spec.write_text("# a comment\nsite: lab\nserving:\n  port: 8000\n  ~: 3\n", encoding="utf-8")
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:5:3", "a key is null")


@pytest.mark.parametrize(
    ("text", "position", "needle"),
    [
        ("site: lab\nnull: 1\n", Position(2, 1), "a key is null"),
        ("site: lab\n: 1\n", Position(2, 1), "a key is null"),
        ("site: lab\n? [a, b]\n: 1\n", Position(2, 3), "a key must be a plain name"),
        ("site: lab\n{a: 1}: 2\n", Position(2, 1), "a key must be a plain name"),
        ("site: &s lab\n*s : 2\n", Position(2, 1), "not an alias"),
        ("site: lab\nsite: lab2\n", Position(2, 1), 'duplicate key "site"'),
    ],
)
def test_odd_keys_are_located_errors(text: str, position: Position, needle: str) -> None:
    f = only_error(validate_text(text))
    assert f.position == position and needle in f.message


def test_unknown_tag_is_an_error_naming_the_tag(tmp_path: Path, startup_s: float) -> None:
    text = to_yaml(load_example("a2-single-distill")).replace("cards: 8", "cards: !int8 8")
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    line = text.splitlines().index("    cards: !int8 8") + 1
    assert_refused(
        cli("validate", str(spec)), startup_s, f"{spec}:{line}:12", "YAML tag '!int8' is not supported"
    )


@pytest.mark.parametrize(
    "tagged",
    [
        "!!binary aGVsbG8=",
        "!!timestamp 2025-01-01",
        "!<tag:example.com,2025:x> 1",
        "!!set {a: null}",
        "!!omap [a: 1]",
        "!!str {a: 1}",
        "!!map [1]",
    ],
)
def test_tags_outside_the_core_schema_are_refused(tagged: str) -> None:
    f = only_error(validate_text(f"site: lab\nlabels: {tagged}\n"))
    assert f.position == Position(2, 9) and "YAML tag '" in f.message and f.code == "tag"


def test_core_schema_tags_are_legal_yaml_and_apply() -> None:
    data = load_example("a3-single-r1-w8a8")
    text = to_yaml(data)
    assert "chip: '910_93'" in text  # quoted: unquoted, YAML reads the number 91093
    plain = text.replace("chip: '910_93'", "chip: !!str 910_93").replace("cards: 8", "cards: !!int '8'")
    assert "!!str 910_93" in plain and "!!int '8'" in plain
    result = validate_text(plain)
    assert result.ok, [format_finding(f, "s") for f in result.findings]
    doc, _ = parse_text("a: !!float 1\nb: !!bool 'true'\nc: !!null ''\nd: ! 8\ne: !!str\n", "s.yaml")
    assert doc is not None and doc.data == {"a": 1.0, "b": True, "c": None, "d": "8", "e": ""}
    f = only_error(validate_text("site: lab\nlabels: {a: !!int 'x1'}\n"))
    assert f.position == Position(2, 13) and "'x1' is not an integer" in f.message


def test_in_process_validation_of_each_hostile_file_is_fast(tmp_path: Path) -> None:
    cases = {
        "bomb": billion_laughs().encode(),
        "deep": ("site: " + "[" * 100_000 + "]" * 100_000 + "\n").encode(),
        "bigint": ("site: lab\nprofiles: {p: {cards: " + "9" * 5000 + "}}\n").encode(),
        "utf16": to_yaml(load_example("a2-single-distill")).encode("utf-16"),
        "tag": b"site: lab\nprofiles: {p: {cards: !int8 8}}\n",
    }
    for name, raw in cases.items():
        spec = tmp_path / f"{name}.yaml"
        spec.write_bytes(raw)
        # CPU time of this process, not wall time: the machine is shared (CI runs the unit tests at nice 19
        # beside the integration tests), and waiting for a CPU is not the validation's cost
        with cpu_seconds_at_most(0.5, name):
            result = validate_file(spec)
        assert not result.ok and len(result.errors) == 1, name
