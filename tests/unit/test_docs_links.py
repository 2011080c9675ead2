"""The documentation's cross-references resolve: every relative Markdown link in README.md and docs/*.md
names a file of the repository (and, with a #fragment, a heading of that file, slugged as GitHub does),
and every path the prose quotes in backticks under docs/, roles/, playbooks/, ascend_sim/ or benchmarks/
exists. Links are found with markdown-it-py (CommonMark), not with a regular expression of our own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
_ANCHOR = re.compile(r'<a\s+(?:id|name)="([^"]+)"')
_QUOTED = re.compile(r"`((?:docs|roles|playbooks|ascend_sim|benchmarks)/[A-Za-z0-9_./-]+)`")


def _tokens(path: Path) -> list[tuple[str, str]]:
    """(kind, value): 'link' for every link href, 'heading' for every heading's text, 'anchor' for every
    explicit HTML anchor (<a id="...">)."""
    out: list[tuple[str, str]] = []
    tokens = MarkdownIt("commonmark").enable("table").parse(path.read_text())
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            out.append(("heading", tokens[i + 1].content))
        if tok.type == "html_block":
            out += [("anchor", a) for a in _ANCHOR.findall(tok.content)]
        for child in tok.children or []:
            if child.type == "html_inline":
                out += [("anchor", a) for a in _ANCHOR.findall(child.content)]
            if child.type == "link_open":
                out.append(("link", str(child.attrGet("href") or "")))
    return out


def _slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped except - and _, spaces to -."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken: list[str] = []
    for kind, href in _tokens(doc):
        if kind != "link" or re.match(r"^[a-z]+:", href):
            continue
        target, _, fragment = href.partition("#")
        dest = (doc.parent / target).resolve() if target else doc
        if not dest.exists():
            broken.append(f"{href}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif fragment and dest.suffix == ".md":
            found = _tokens(dest)
            slugs = {_slug(t) for k, t in found if k == "heading"} | {t for k, t in found if k == "anchor"}
            if fragment not in slugs:
                broken.append(f"{href}: no heading with anchor #{fragment} in {dest.name}")
    assert not broken, f"{doc.name}: " + "; ".join(broken)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_quoted_repository_paths_exist(doc: Path) -> None:
    missing = sorted(
        {
            p
            for p in _QUOTED.findall(doc.read_text())
            if "<" not in p and "*" not in p and not (ROOT / p).exists()
        }
    )
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def test_the_slug_matches_githubs_for_a_heading_with_code_and_punctuation() -> None:
    # GitHub renders "## Bench (`orchestrator bench SITE`)" with the anchor #bench-orchestrator-bench-site.
    assert _slug("Bench (`orchestrator bench SITE`)") == "bench-orchestrator-bench-site"
