"""Mutated example specs: the CLI's check either accepts them or refuses them with located findings.

Hypothesis mutates inventories/*/site.yaml: bytes (flips, insertions of random or YAML-significant bytes,
deletions), YAML nodes (deletions, duplications, swaps, moves of subtrees, key renames) and numbers (huge,
negative, fractional, infinite, NaN, 5,000 digits). Each mutant goes through check_file, the function every
CLI command that loads a spec calls, and must come out as exit 0 (valid, with a plan) or exit 2 (invalid,
every finding at a line and column inside the file, or a byte offset for a file that is not text), never
as an exception.
"""

from __future__ import annotations

import copy
import functools
import io
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rich.console import Console
from ruamel.yaml.error import MarkedYAMLError

from orchestrator.cli.check import EXIT_INVALID, EXIT_OK, check_file
from orchestrator.spec import compose as compose_module
from orchestrator.spec.compose import Composer, MapPos, SeqPos, events
from orchestrator.spec.limits import DEFAULT_LIMITS
from orchestrator.spec.loader import SourceMap, parse_text
from orchestrator.spec.scalars import ComposeError
from orchestrator.spec.textfile import check_characters
from tests.helpers import EXAMPLES, cpu_seconds_at_most, to_yaml

SITES = sorted(EXAMPLES.glob("*/site.yaml"))
TEXTS = {p.parent.name: p.read_bytes() for p in SITES}
# The example data as the user wrote it (a safe load keeps no positions; node mutations dump it again).
DATA: dict[str, Any] = {}

# at least 500 per run (CI); ORCHESTRATOR_MUTANTS=5000 runs more locally
EXAMPLES_PER_RUN = max(500, int(os.environ.get("ORCHESTRATOR_MUTANTS", "500")))
# A mutant takes ~30 ms of CPU; the deadline only catches a hang (an alias bomb, a quadratic rule) without
# failing on a slow machine. It counts each example's CPU time (cpu_deadline), not wall time as Hypothesis's
# own deadline does: the machine is shared (CI runs the unit tests at nice 19 beside the integration tests),
# and an example that waited seconds for a CPU has not done seconds of work.
DEADLINE_CPU_S = 5.0
PROPERTY = settings(
    max_examples=EXAMPLES_PER_RUN,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)

P = ParamSpec("P")


def cpu_deadline(seconds: float) -> Callable[[Callable[P, None]], Callable[P, None]]:
    """Hypothesis's deadline in CPU time: each call of the test (one example) fails past `seconds` of CPU."""

    def decorate(test: Callable[P, None]) -> Callable[P, None]:
        @functools.wraps(test)
        def timed(*args: P.args, **kwargs: P.kwargs) -> None:
            with cpu_seconds_at_most(seconds, "one example"):
                test(*args, **kwargs)

        return timed

    return decorate


YAML_BYTES = [
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"<<: [1]\n",
    b"!int8 ",
    b"!!str ",
    b"!!binary ",
    b"~: 1\n",
    b"? [a]\n: b\n",
    b"\t",
    b"---\n",
    b"%YAML 1.1\n",
    b"[",
    b"]",
    b"{",
    b"}",
    b": ",
    b"- ",
    b"\n  ",
    b"'",
    b'"',
    b"#",
    b"|\n",
    b"\x00",
    b"\xff\xfe",
    b"\xe9",
    b"\x07",
    b"\xef\xbb\xbf",
    b",",
    b"@",
    b"`",
    b"%",
    b"\r\n",
]
NUMBERS = [
    ".inf",
    "-.inf",
    ".nan",
    "1e300",
    "-1e300",
    "1e-300",
    "9" * 5000,
    "-1",
    "0",
    "-0",
    "1.5",
    "0.0",
    "0x7fffffffffffffff",
    "1_000",
    str(2**64),
    str(-(2**63) - 1),
    "0o17",
    "0b101",
    "1e400",
    "65536",
    "8.0",
]
_NUMBER = re.compile(rb"(?<![\w.\-])-?[0-9]+(\.[0-9]+)?(?![\w.])")


def _data(name: str) -> Any:
    if name not in DATA:
        from ruamel.yaml import YAML

        DATA[name] = YAML(typ="safe").load(TEXTS[name])
    return copy.deepcopy(DATA[name])


def _nodes(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _nodes(v, (*path, i))


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        root = root[part]
    return root


@st.composite
def node_mutants(draw: st.DrawFn, name: str) -> bytes:
    """The example's data with 1-3 structural changes, dumped as YAML."""
    data = _data(name)
    for _ in range(draw(st.integers(1, 3))):
        nodes = list(_nodes(data))
        containers = [(p, n) for p, n in nodes if isinstance(n, dict | list) and n]
        if not containers:
            break
        _, node = draw(st.sampled_from(containers))
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        key = draw(st.sampled_from(keys))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "graft", "rename", "number", "scalar"]))
        event(f"node op {op}")
        if op == "delete":
            del node[key]
        elif op == "duplicate":
            if isinstance(node, list):
                node.append(copy.deepcopy(node[key]))
            else:
                node[f"{key}{draw(st.sampled_from(['', '2', '_copy']))}x"] = copy.deepcopy(node[key])
        elif op == "swap":
            other = draw(st.sampled_from(keys))
            node[key], node[other] = node[other], node[key]
        elif op == "graft":  # put a subtree from anywhere in the file here
            _, donor = draw(st.sampled_from(nodes))
            node[key] = copy.deepcopy(donor)
        elif op == "rename" and isinstance(node, dict):
            new = draw(
                st.sampled_from([f"{key}s", str(key)[:-1], str(key).upper(), "", "~", "null", "<<", "8000"])
                | st.text(min_size=1, max_size=12)
            )
            node[new] = node.pop(key)
        elif op == "number":
            node[key] = draw(
                st.integers(-(2**80), 2**80)
                | st.floats(allow_nan=True, allow_infinity=True)
                | st.sampled_from([0, -1, 2**63, 10**30, 1e300, float("inf"), float("nan")])
            )
        else:
            node[key] = draw(st.none() | st.booleans() | st.text(max_size=20) | st.just([]) | st.just({}))
    return to_yaml(data).encode("utf-8") if isinstance(data, dict) else b"- not a mapping\n"


@st.composite
def byte_mutants(draw: st.DrawFn, raw: bytes) -> bytes:
    """1-4 edits of the bytes: flips, insertions, deletions, number replacements."""
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "number", "number"]))
        event(f"byte op {op}")
        at = draw(st.integers(0, max(len(raw) - 1, 0)))
        if op == "flip" and raw:
            raw = raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1 :]
        elif op == "insert":
            chunk = draw(st.sampled_from(YAML_BYTES) | st.binary(min_size=1, max_size=8))
            raw = raw[:at] + chunk + raw[at:]
        elif op == "delete":
            raw = raw[:at] + raw[at + draw(st.integers(1, 40)) :]
        else:
            numbers = list(_NUMBER.finditer(raw))
            if numbers:
                m = draw(st.sampled_from(numbers))
                new = draw(st.sampled_from(NUMBERS) | st.integers(-(2**70), 2**70).map(str))
                raw = raw[: m.start()] + new.encode() + raw[m.end() :]
    return raw


@st.composite
def mutants(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from(sorted(TEXTS)))
    kind = draw(st.sampled_from(["bytes", "nodes", "both"]))
    event(f"mutant {kind}")
    raw = TEXTS[name] if kind == "bytes" else draw(node_mutants(name))
    return draw(byte_mutants(raw)) if kind != "nodes" else raw


def _node_positions(smap: SourceMap) -> set[tuple[int, int]]:
    """Every position the loader recorded: the document, and each key and value, aliases included."""
    found = {smap.root}
    todo: list[MapPos | SeqPos | None] = [smap.tree]
    seen: set[int] = set()
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        found.add(node.start)
        if isinstance(node, MapPos):
            for key_pos, value_pos, child in node.entries.values():
                found |= {key_pos, value_pos}
                todo.append(child)
        else:
            for pos, child in node.items:
                found.add(pos)
                todo.append(child)
    return found


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mutants") / "site.yaml"


@PROPERTY
@given(raw=mutants())
@cpu_deadline(DEADLINE_CPU_S)
def test_a_mutated_example_is_valid_or_refused_with_located_findings(spec_file: Path, raw: bytes) -> None:
    spec_file.write_bytes(raw)
    err = Console(file=io.StringIO(), width=200)
    result, code = check_file(spec_file, err)
    printed = err.file.getvalue()  # type: ignore[attr-defined]
    event(f"exit {code}")
    assert code in (EXIT_OK, EXIT_INVALID)
    if code == EXIT_OK:
        assert result.ok and result.plan is not None
        return
    assert result.errors, printed
    assert "INVALID: " in printed
    lines = raw.count(b"\n") + 1
    written = _node_positions(result.document.source_map) if result.document is not None else None
    for f in result.findings:
        if f.position is None:
            # only a file that is not (readable) text has no line: the finding names a byte offset
            assert f.code in ("io", "limit") and ("byte offset" in f.message or "bytes" in f.message), f
            continue
        assert 1 <= f.position.line <= lines and f.position.column >= 1, (f, lines)
        assert f.fix, f
        if written is not None:  # a finding about the spec points at a key or value the user wrote
            assert (f.position.line, f.position.column) in written, f


def test_the_examples_themselves_are_valid(spec_file: Path) -> None:
    """The base of every mutant: unchanged, each example passes the same check."""
    for name, raw in TEXTS.items():
        spec_file.write_bytes(raw)
        result, code = check_file(spec_file, Console(file=io.StringIO()))
        assert code == EXIT_OK and result.plan is not None, name


def _compose_with(text: str, fast: bool) -> tuple[str, str]:
    """(outcome, repr of data and positions) of composing text with libyaml (fast) or ruamel's parser."""
    composer = Composer(DEFAULT_LIMITS)
    try:
        for ev in events(text, fast=fast):
            composer.feed(ev)
        data, tree, root = composer.result()
    except MarkedYAMLError:
        return "syntax", ""
    except ComposeError as exc:
        return "refused", f"{exc.pos} {exc.message}"
    return "ok", repr((data, tree, root))


@settings(PROPERTY, max_examples=200)
@given(raw=mutants())
@cpu_deadline(DEADLINE_CPU_S)
def test_libyaml_and_ruamels_parser_compose_the_same(raw: bytes) -> None:
    """The loader reads with libyaml and asks ruamel's parser only when libyaml refuses: where both read a
    text, they must agree on every value and position."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    if check_characters(text) is not None or "\ufeff" in text:
        return  # (ruamel's reader does not count a byte order mark inside the text as a column; libyaml does)
    fast, slow = _compose_with(text, fast=True), _compose_with(text, fast=False)
    event(f"libyaml {fast[0]}, ruamel {slow[0]}")
    if "syntax" not in (fast[0], slow[0]):
        assert fast[0] == slow[0], (fast, slow)
    if fast[0] == slow[0] == "ok":  # (refusals may word the same mistake differently: '*a:' is an alias
        assert fast == slow  # named 'a' to libyaml, 'a:' to YAML 1.2)


def test_without_libyaml_the_pure_parser_reads_the_examples_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, raw in TEXTS.items():
        with_c = parse_text(raw.decode(), name)[0]
        monkeypatch.setattr(compose_module, "CParser", None)
        without = parse_text(raw.decode(), name)[0]
        monkeypatch.undo()
        assert with_c is not None and without is not None
        assert (with_c.data, with_c.source_map) == (without.data, without.source_map), name


def test_yaml_1_2_that_libyaml_refuses_is_read_by_ruamels_parser() -> None:
    text = "drift:\n  outputs:\n    - {type: webhook, url: https://hooks.example.com/a:b}\n"
    with pytest.raises(MarkedYAMLError):
        list(events(text, fast=True))
    doc, findings = parse_text(text, "s.yaml")
    assert findings == [] and doc is not None
    assert doc.data["drift"]["outputs"][0]["url"] == "https://hooks.example.com/a:b"
