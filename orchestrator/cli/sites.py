"""Where sites live, and what the user typed as SITE: a spec file, a folder with site.yaml, or a site name.

The project root holds `inventories/<site>/` (specs and rendered inventories) and `.orchestrator/` (state:
runs, simulated clusters). It is, in this order: the `--root` option, the ORCHESTRATOR_ROOT environment
variable, the nearest folder at or above the current one that has an `inventories/` folder, else the current
folder.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "ORCHESTRATOR_ROOT"
_override: list[Path] = []  # the --root option of this invocation, if given


class SiteNotFound(Exception):
    pass


def set_root(path: Path | None) -> None:
    """The --root option (None: fall back to the environment and the current folder)."""
    _override[:] = [path] if path is not None else []


def project_root() -> Path:
    if _override:
        return _override[0]
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env)
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "inventories").is_dir():
            return folder
    return here


def inventories() -> Path:
    return project_root() / "inventories"


def resolve_site(site: str) -> Path:
    inv = inventories()
    candidates = [Path(site), Path(site) / "site.yaml", inv / site / "site.yaml"]
    for cand in candidates:
        if cand.is_file():
            return cand
    known = sorted(p.parent.name for p in inv.glob("*/site.yaml")) if inv.is_dir() else []
    hint = f" Known sites under {inv}: {', '.join(known)}." if known else ""
    raise SiteNotFound(
        f"no site spec at '{site}' (tried {', '.join(str(c) for c in candidates)}).{hint} "
        f"Fix: pass the spec file, or point --root (or ${ROOT_ENV}) at the folder that holds inventories/."
    )


def example_sites() -> list[Path]:
    inv = inventories()
    return sorted(inv.glob("*/site.yaml")) if inv.is_dir() else []
