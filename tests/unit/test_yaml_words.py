"""A YAML syntax error is said in words at its line (orchestrator/spec/yaml_words.py): an unclosed list,
mapping or quote with the line it opened on, a tab, ': ' inside a value, a list item among keys, a second
document; the parser's own text only for the uncommon cases."""

from __future__ import annotations

import pytest

from orchestrator.spec.findings import Finding, Position, format_finding
from orchestrator.spec.loader import parse_text


def _fail(text: str) -> Finding:
    doc, findings = parse_text(text, "site.yaml")
    assert doc is None
    assert len(findings) == 1
    return findings[0]


@pytest.mark.parametrize(
    ("text", "position", "detail", "fix"),
    [
        (
            "site: a\nserving:\n  devices: [0, 1\n  port: 8000\n",
            Position(4, 7),
            "a '[...]' list (opened at line 3, column 12) is not closed before this point: its ']' is "
            "missing",
            "close the list with ']' on the line where it opened",
        ),
        (
            "site: a\nserving:\n\tport: 8000\n",
            Position(3, 1),
            "the line is indented with a tab ('\\t'): YAML indents with spaces, never tabs",
            "replace the tab with spaces",
        ),
        (
            'site: "unclosed\nserving: {}\n',
            Position(3, 1),
            "a quoted value (opened at line 1, column 7) is never closed: its closing quote is missing",
            "add the closing quote",
        ),
        (
            "site: a\n---\nsite: b\n",
            Position(2, 1),
            "'---' starts a second document, and a spec file holds a single document",
            "remove this '---' line",
        ),
        (
            "site: a\n  port: 8000\n",
            Position(2, 7),
            "this 'key: value' line is indented deeper than the keys beside it",
            "indent this line like the other keys of its section",
        ),
        (
            "site: a\nserving:\n  port: 8000\n - x\n",
            Position(4, 2),
            "this line is indented unlike the keys of its section (the section starts at line 1, column 1)",
            "indent every key of one section by the same number of spaces",
        ),
        (
            "site: a\nmodel:\n  name: qwen: 32b\n",
            Position(3, 13),
            "this line's value contains ': ' (a colon and a space)",
            'put the value in quotes, e.g. key: "a: b"',
        ),
        (
            "site: a\nmodel:\n  name: x\n  - y\n",
            Position(4, 3),
            "a list item ('- ...') stands among the keys of a mapping",
            "put the list under a key",
        ),
        ("site: @lab\n", Position(1, 7), "a value starts with '@', which YAML reserves", 'key: "@value"'),
    ],
    ids=[
        "unclosed-flow-list",
        "tab",
        "unclosed-quote",
        "two-documents",
        "bad-indent",
        "dedented-item",
        "colon-in-value",
        "item-among-keys",
        "reserved-character",
    ],
)
def test_syntax_errors_say_in_words_what_is_wrong_at_their_line(
    text: str, position: Position, detail: str, fix: str
) -> None:
    """Before, the parser's own words ("mapping values are not allowed here", "expected <block end>, but
    found '-'") with the fix "fix the YAML syntax at that position"."""
    f = _fail(text)
    assert f.is_error and f.code == "yaml" and f.path == ()
    assert f.position == position
    assert f.message.startswith("YAML syntax error: ")
    assert detail in f.message
    assert f.fix is not None and fix in f.fix
    assert format_finding(f, "site.yaml").startswith(f"site.yaml:{position.line}:{position.column}: error: ")
