"""A YAML syntax error in words: what is wrong at the line the parser stopped at, and how to fix it.

ruamel.yaml (like PyYAML) describes a syntax error in parser terms ("mapping values are not allowed here",
"expected <block end>, but found '<block mapping start>'"); the common mistakes behind them are a value
with ': ' in it, a line indented unlike its section, an unclosed list, mapping or quote, a tab, and a value
that starts with a character YAML reserves. Anything else keeps the parser's words, with a general fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from ruamel.yaml.error import MarkedYAMLError


@dataclass(frozen=True)
class SyntaxWords:
    message: str
    fix: str


def _line(text: str, index: int) -> str:
    lines = text.splitlines()
    return lines[index] if 0 <= index < len(lines) else ""


def _opened(exc: MarkedYAMLError, verb: str = "opened") -> str:
    mark = exc.context_mark
    return f" ({verb} at line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def _mapping_values(text: str, line: int, column: int) -> SyntaxWords:
    before = _line(text, line)[:column]
    if ": " in before or before.rstrip().endswith(":"):
        return SyntaxWords(
            "this line's value contains ': ' (a colon and a space), which YAML reads as a second "
            "'key: value' inside the value",
            'put the value in quotes, e.g. key: "a: b"',
        )
    return SyntaxWords(
        "this 'key: value' line is indented deeper than the keys beside it, or the line above it is not a "
        "key ('key:value' needs a space after the colon)",
        "indent this line like the other keys of its section (same column), and write 'key: value' with a "
        "space after each colon",
    )


def _block_end(found: str, exc: MarkedYAMLError) -> SyntaxWords:
    if found == "'-'":
        return SyntaxWords(
            "a list item ('- ...') stands among the keys of a mapping",
            "put the list under a key ('key:' on the line above, the items indented below it), or indent the "
            "item like the other items of its list",
        )
    if "<scalar>" in found:
        return SyntaxWords(
            "text follows a value where a new line with 'key: value' was expected: a quoted value goes on "
            "after its closing quote, or the line is indented unlike its section",
            "write a quote inside a '...' value twice ('it''s') or use \"...\", and indent each key like "
            "the others of its section",
        )
    return SyntaxWords(
        f"this line is indented unlike the keys of its section{_opened(exc, 'the section starts')}",
        "indent every key of one section by the same number of spaces (the examples in inventories/ use 2)",
    )


def syntax_words(exc: MarkedYAMLError, text: str) -> SyntaxWords:
    """The error in words, for the line of exc.problem_mark (or its context_mark)."""
    problem, context = str(exc.problem or ""), str(exc.context or "")
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line, mark.column) if mark is not None else (0, 0)
    if "mapping values are not allowed" in problem:
        return _mapping_values(text, line, column)
    if "expected <block end>" in problem:
        return _block_end(problem.rpartition("found ")[2], exc)
    if "flow sequence" in context:
        return SyntaxWords(
            f"a '[...]' list{_opened(exc)} is not closed before this point: its ']' is missing, or a ',' "
            "between two of its items",
            "close the list with ']' on the line where it opened, or separate its items with ', '",
        )
    if "flow mapping" in context:
        return SyntaxWords(
            f"a '{{...}}' mapping{_opened(exc)} is not closed before this point: its '}}' is missing, or a "
            "',' between two of its entries",
            "close the mapping with '}' on the line where it opened, or separate its entries with ', '",
        )
    if "quoted scalar" in context:
        return SyntaxWords(
            f"a quoted value{_opened(exc)} is never closed: its closing quote is missing",
            "add the closing quote at the end of that value",
        )
    if "that cannot start any token" in problem:
        char = problem.partition("found character ")[2].partition(" that")[0]
        if char == "'\\t'":
            return SyntaxWords(
                "the line is indented with a tab ('\\t'): YAML indents with spaces, never tabs",
                "replace the tab with spaces",
            )
        bare = char.strip("'")
        return SyntaxWords(
            f"a value starts with '{bare}', which YAML reserves",
            f'put the value in quotes, e.g. key: "{bare}value"',
        )
    detail = " ".join(p for p in (context, problem) if p).strip().rstrip(":")
    return SyntaxWords(
        f"the YAML parser stopped here: {detail}",
        "check the indentation and the quoting of this line and of the line above it",
    )
