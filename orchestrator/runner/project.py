"""Where the Ansible content lives (playbooks/, roles/, collections/) and where a run keeps its files.

The content ships with the checkout the `orchestrator` package is installed from; a project root
(`--root`, holding inventories/ and .orchestrator/) may be elsewhere, e.g. a scratch folder.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orchestrator


class ContentMissing(Exception):
    """The checkout has no playbooks/ (an installed wheel without the Ansible content)."""


@dataclass(frozen=True)
class Content:
    """The Ansible content of a checkout."""

    root: Path

    @property
    def playbooks(self) -> Path:
        return self.root / "playbooks"

    @property
    def roles(self) -> Path:
        return self.root / "roles"

    @property
    def collections(self) -> Path:
        return self.root / "collections"

    def playbook(self, phase: str) -> Path:
        return self.playbooks / f"{phase}.yml"

    def implemented(self, phase: str) -> bool:
        """A phase is implemented when its playbook exists in the checkout."""
        return self.playbook(phase).is_file()


def content(project_root: Path | None = None) -> Content:
    """The project root's own content when it has playbooks/site.yml, else the checkout of this package."""
    for candidate in (project_root, Path(orchestrator.__file__).resolve().parents[1]):
        if candidate is not None and (candidate / "playbooks" / "site.yml").is_file():
            return Content(candidate.resolve())
    raise ContentMissing(
        "no playbooks/site.yml next to the project root or the orchestrator package. Fix: run orchestrator "
        "from a checkout of ascend-orchestrator (the playbooks and roles ship with it)."
    )


def not_implemented_message(phase: str) -> str:
    return f"not implemented (no playbooks/{phase}.yml in this checkout)"


def new_run_id(now: datetime | None = None) -> str:
    """Sortable and unique: UTC time to the second + 6 random hex digits (20250102T030405Z-a1b2c3)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def runs_dir(project_root: Path, site: str) -> Path:
    return project_root / ".orchestrator" / "runs" / site


def facts_dir(project_root: Path, site: str) -> Path:
    return project_root / ".orchestrator" / "facts" / site


def new_run_dir(project_root: Path, site: str, run_id: str) -> Path:
    """A folder of its own for one run; refuses to reuse one (ansible-runner keeps state in its folders)."""
    path = runs_dir(project_root, site) / run_id
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir(mode=0o700)  # FileExistsError: never reuse
    return path
