"""Fold the YAML event stream into plain Python data plus a tree of source positions, within LoadLimits.

ruamel's loaders build the alias-expanded tree recursively: an alias bomb costs exponential time and memory,
deep nesting overflows the stack, merge keys lose their positions and unknown tags pass silently. Here one
loop with an explicit stack reads the parser's events (libyaml through ruamel.yaml.clib, or ruamel's pure
parser where the C extension is missing) and
- shares an anchored value between its uses instead of copying it, but counts its nodes once per use (every
  later stage walks it once per use) and caps that count;
- caps the nesting depth, aliases included;
- accepts the YAML core schema only (str, int, float, bool, null, map, seq); any other tag is an error;
- resolves merge keys (`<<: *defaults`) as YAML 1.1 defines them, keeping the positions of the merged
  entries where they were written;
- accepts scalar keys only, never null, never twice in one mapping.
Problems are raised as ComposeError with a position; the parser's own syntax errors pass through as
ruamel MarkedYAMLError.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from orchestrator.spec.limits import LoadLimits
from orchestrator.spec.scalars import CORE, ComposeError, Pos, construct, tag_of, unsupported_tag

try:
    from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]
except ImportError:  # ruamel.yaml.clib is a dependency on CPython; without it the pure parser serves
    CParser = None

_SATURATED = 1 << 62  # node counts stop growing here: an alias bomb's size is "too many", not a huge int


@dataclass(slots=True)
class MapPos:
    """Positions of a mapping: where it starts and, per key, (key position, value position, value's tree)."""

    start: Pos
    entries: dict[str, tuple[Pos, Pos, PosTree]] = field(default_factory=dict)


@dataclass(slots=True)
class SeqPos:
    """Positions of a list: where it starts and, per item, (item position, item's tree)."""

    start: Pos
    items: list[tuple[Pos, PosTree]] = field(default_factory=list)


PosTree = MapPos | SeqPos | None


@dataclass(slots=True)
class _Node:
    """A finished node as its parent receives it."""

    value: Any
    pos: Pos
    tree: PosTree
    size: int  # nodes, aliases expanded (saturating)
    height: int  # nesting levels, 1 for a scalar
    empty: bool = False  # an empty scalar ('key:' with nothing after it): point at the key instead


@dataclass(slots=True)
class _Frame:
    tree: MapPos | SeqPos
    data: Any  # dict or list
    anchor: str | None
    size: int = 1
    height: int = 1
    key: tuple[str, Pos] | None = None  # mapping: the key waiting for its value
    merge_at: Pos | None = None  # mapping: position of the '<<' key waiting for its value
    merges: list[_Node] = field(default_factory=list)


def _mark(event: Event) -> Pos:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1)


def events(text: str, fast: bool = True) -> Iterator[Event]:
    """The parser's events: libyaml (about 30x faster) when asked and available, else ruamel's own parser."""
    if not fast or CParser is None:
        yield from YAML(typ="safe", pure=True).parse(text)
        return
    parser = CParser(text)
    try:
        while True:
            event = parser.get_event()
            if event is None:
                return
            yield event
    finally:
        parser.dispose()


class Composer:
    """Feed it the events of one stream, then take .result()."""

    def __init__(self, limits: LoadLimits) -> None:
        self.limits = limits
        self.stack: list[_Frame] = []
        self.anchors: dict[str, _Node] = {}
        self.open_anchors: set[str] = set()
        self.root: _Node | None = None
        self.documents = 0
        self.written = 0  # nodes written in the file
        self.expanded = 0  # nodes added by aliases (saturating)
        self.biggest: tuple[int, str, Pos] | None = None  # the alias use that adds the most nodes

    # ------------------------------------------------------------------------------------------ events
    def feed(self, event: Event) -> None:
        if isinstance(event, ScalarEvent):
            self._scalar(event)
        elif isinstance(event, MappingStartEvent | SequenceStartEvent):
            self._start(event)
        elif isinstance(event, MappingEndEvent | SequenceEndEvent):
            self._end()
        elif isinstance(event, AliasEvent):
            self._alias(event)
        elif isinstance(event, DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise ComposeError(
                    _mark(event),
                    "YAML syntax error: '---' starts a second document, and a spec file holds a single "
                    "document (one site per file)",
                    "remove this '---' line and what follows it, or move that site into a file of its own",
                )

    def result(self) -> tuple[Any, PosTree, Pos | None]:
        """(data, position tree, position of the root node); data None for an empty stream."""
        allowed = self.limits.alias_nodes + self.written
        if self.expanded > allowed and self.biggest is not None:
            size, name, pos = self.biggest
            raise ComposeError(
                pos,
                f"YAML aliases expand this file to {_count(self.expanded)} more nodes, more than the "
                f"{allowed:,} allowed ({self.limits.alias_nodes:,} plus the {self.written:,} nodes written "
                f"in the file); *{name} here alone adds {_count(size)}",
                "write the repeated content out, or use fewer and smaller aliases: aliases whose content "
                "holds further aliases grow exponentially (a 'billion laughs' file)",
                code="limit",
            )
        if self.root is None:
            return None, None, None
        return self.root.value, self.root.tree, self.root.pos

    # ------------------------------------------------------------------------------------------ nodes
    def _depth_check(self, pos: Pos, height: int) -> None:
        if len(self.stack) + height > self.limits.max_depth:
            raise ComposeError(
                pos,
                f"the YAML nests deeper than {self.limits.max_depth} levels here (a site spec needs 6)",
                "check for unbalanced brackets or a value pasted at the wrong indentation",
                code="limit",
            )

    def _start(self, event: MappingStartEvent | SequenceStartEvent) -> None:
        pos = _mark(event)
        is_map = isinstance(event, MappingStartEvent)
        self._refuse_complex_key(event, pos)
        if event.tag not in (None, "!", CORE + ("map" if is_map else "seq")):
            raise unsupported_tag(event.tag, pos)
        self._depth_check(pos, 1)
        self.written += 1
        tree: MapPos | SeqPos = MapPos(pos) if is_map else SeqPos(pos)
        anchor = event.anchor
        if anchor is not None:
            self.open_anchors.add(anchor)
        self.stack.append(_Frame(tree, {} if is_map else [], anchor))

    def _end(self) -> None:
        frame = self.stack.pop()
        if isinstance(frame.tree, MapPos):
            self._merge(frame)
        node = _Node(frame.data, frame.tree.start, frame.tree, frame.size, frame.height)
        if frame.anchor in self.open_anchors:  # (not when the content redefined the name: that one stands)
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = node
        self._deliver(node)

    def _alias(self, event: AliasEvent) -> None:
        pos, name = _mark(event), str(event.anchor)
        self._refuse_complex_key(event, pos)
        if name in self.open_anchors:
            raise ComposeError(
                pos,
                f"alias *{name} refers to a mapping or list that contains it (a recursive structure)",
                f"point *{name} at content outside of &{name}, or write the content out",
            )
        node = self.anchors.get(name)
        if node is None:
            raise ComposeError(
                pos,
                f"alias *{name} is used before any '&{name}' defines it",
                f"define &{name} above this line",
            )
        self._depth_check(pos, node.height)
        self.expanded = min(self.expanded + node.size, _SATURATED)
        if self.biggest is None or node.size > self.biggest[0]:
            self.biggest = (node.size, name, pos)
        self._deliver(_Node(node.value, pos, node.tree, node.size, node.height))

    def _scalar(self, event: ScalarEvent) -> None:
        pos = _mark(event)
        frame = self._wants_key()
        if frame is not None:
            self._key(frame, event, pos)
            return
        self._depth_check(pos, 1)
        self.written += 1
        value = construct(event, pos, self.limits.max_number_digits)
        empty = event.tag is None and value is None and event.value == "" and not event.style
        node = _Node(value, pos, None, 1, 1, empty)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
            self.open_anchors.discard(event.anchor)
        self._deliver(node)

    def _wants_key(self) -> _Frame | None:
        """The innermost mapping, when its next node is a key."""
        frame = self.stack[-1] if self.stack else None
        if frame is None or not isinstance(frame.tree, MapPos) or frame.key or frame.merge_at:
            return None
        return frame

    def _refuse_complex_key(self, event: Event, pos: Pos) -> None:
        """A collection or alias where a mapping key is expected is a complex key: refuse it."""
        if self._wants_key() is not None:
            what = "an alias" if isinstance(event, AliasEvent) else "a mapping or list"
            raise ComposeError(
                pos,
                f"a key must be a plain name, not {what}",
                "write the key as a plain word followed by ':'",
            )

    def _key(self, frame: _Frame, event: ScalarEvent, pos: Pos) -> None:
        self._depth_check(pos, 1)
        self.written += 1
        tag, explicit = tag_of(event)
        if tag == CORE + "merge" and not explicit:
            if frame.merges:
                raise _duplicate("<<", pos)
            frame.merge_at = pos
            return
        if tag == CORE + "null":
            raise ComposeError(
                pos,
                "a key is null ('~', 'null' or nothing before the ':'); keys are names",
                "write the key's name before the ':', or delete the line",
            )
        if tag not in (CORE + "str", CORE + "int", CORE + "float", CORE + "bool", CORE + "timestamp"):
            raise unsupported_tag(tag, pos)
        key = str(event.value)
        if key in frame.data:
            raise _duplicate(key, pos, frame.tree.entries[key][0])  # type: ignore[union-attr]
        frame.key = (key, pos)

    def _deliver(self, node: _Node) -> None:
        if not self.stack:
            self.root = node
            return
        frame = self.stack[-1]
        frame.size = min(frame.size + node.size, _SATURATED)
        frame.height = max(frame.height, node.height + 1)
        if isinstance(frame.tree, SeqPos):
            frame.data.append(node.value)
            frame.tree.items.append((node.pos, node.tree))
        elif frame.merge_at is not None:
            frame.merges.append(node)
            frame.merge_at = None
        elif frame.key is not None:
            key, key_pos = frame.key
            frame.data[key] = node.value
            frame.tree.entries[key] = (key_pos, key_pos if node.empty else node.pos, node.tree)
            frame.key = None

    # ------------------------------------------------------------------------------------------ merges
    def _merge(self, frame: _Frame) -> None:
        """Merged entries fill in keys the mapping does not write itself; earlier sources win."""
        tree = frame.tree
        if not isinstance(tree, MapPos):
            return
        for source in frame.merges:
            for data, src_tree in _merge_sources(source):
                for key, value in data.items():
                    if key not in frame.data:
                        frame.data[key] = value
                        tree.entries[key] = src_tree.entries[key]


def _merge_sources(source: _Node) -> Iterator[tuple[dict[str, Any], MapPos]]:
    if isinstance(source.value, dict) and isinstance(source.tree, MapPos):
        yield source.value, source.tree
        return
    if isinstance(source.value, list) and isinstance(source.tree, SeqPos):
        for value, (pos, tree) in zip(source.value, source.tree.items, strict=True):
            if not (isinstance(value, dict) and isinstance(tree, MapPos)):
                raise _bad_merge(pos)
            yield value, tree
        return
    raise _bad_merge(source.pos)


def _bad_merge(pos: Pos) -> ComposeError:
    return ComposeError(
        pos,
        "a merge key '<<' takes a mapping or a list of mappings (usually aliases such as *defaults)",
        "write '<<: *name' where '&name' marks a mapping, or write the keys out",
    )


def _duplicate(key: str, pos: Pos, first: Pos | None = None) -> ComposeError:
    where = f" (first at line {first[0]})" if first else ""
    return ComposeError(
        pos,
        f'duplicate key "{key}": it appears twice in the same mapping{where}',
        "remove or rename one of the two keys",
    )


def _count(n: int) -> str:
    return "more than 4 quintillion" if n >= _SATURATED else f"{n:,}"


def compose(text: str, limits: LoadLimits) -> tuple[Any, PosTree, Pos | None]:
    """Data, positions and the root's position of a one-document YAML text.

    libyaml reads YAML 1.1 syntax: it refuses some YAML 1.2 that ruamel reads (a ':' inside a plain scalar
    in a flow mapping, as in {url: https://...}). When it refuses, ruamel's parser decides, and its error
    (if any) is the one reported.
    """
    composer = Composer(limits)
    try:
        for event in events(text):
            composer.feed(event)
    except MarkedYAMLError:
        if CParser is None:
            raise
        composer = Composer(limits)
        for event in events(text, fast=False):
            composer.feed(event)
    return composer.result()
