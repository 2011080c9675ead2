"""Resolve what the user typed as SITE: a spec file, a folder holding site.yaml, or a site name."""

from __future__ import annotations

from pathlib import Path

INVENTORIES = Path("inventories")


class SiteNotFound(Exception):
    pass


def resolve_site(site: str) -> Path:
    candidates = [Path(site), Path(site) / "site.yaml", INVENTORIES / site / "site.yaml"]
    for cand in candidates:
        if cand.is_file():
            return cand
    known = sorted(p.parent.name for p in INVENTORIES.glob("*/site.yaml")) if INVENTORIES.is_dir() else []
    hint = f" Known sites: {', '.join(known)}." if known else ""
    raise SiteNotFound(f"no site spec at '{site}' (tried {', '.join(str(c) for c in candidates)}).{hint}")


def example_sites() -> list[Path]:
    return sorted(INVENTORIES.glob("*/site.yaml")) if INVENTORIES.is_dir() else []
