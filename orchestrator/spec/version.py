"""The spec format version: the top-level `spec_version` integer every site spec carries.

Convention (docs/spec.md, "Spec format version"): `spec_version` is required, an integer, and written as the
first key of the file. A release reads the formats in READABLE_VERSIONS; a change that makes an existing spec
mean something else, or stop validating, raises SPEC_VERSION by one and adds a step to
orchestrator/spec/migrate.py, so `orchestrator migrate SITE` rewrites an older spec. A spec without the key is
format 0: everything written before formats were numbered.
"""

from __future__ import annotations

from typing import Any

from orchestrator.spec.common import Renamed
from orchestrator.spec.findings import Finding, SpecPath, error
from orchestrator.spec.gateway import RENAMED_POLICIES
from orchestrator.spec.image import RENAMED_BASE_OS

SPEC_VERSION = 1
"""The format this release writes, and the newest it reads."""

READABLE_VERSIONS = (1,)
"""The formats this release validates; older ones are migrated first (`orchestrator migrate`)."""

UNVERSIONED = 0
"""The format of a spec without spec_version (written before formats were numbered)."""

MIGRATE_FIX = "run `orchestrator migrate SITE` (rewrites it in place, keeping comments and order)"

MIGRATE_HINT = (
    "In a spec of format 0 (no spec_version), `orchestrator migrate SITE` writes '{target}' here and "
    "rewrites the rest in place"
)
"""What the structural errors for values the spec used to accept add to their fix ({target}: new value)."""

RENAMED_VALUES: dict[SpecPath, dict[str, Renamed]] = {
    ("gateway", "policy"): RENAMED_POLICIES,
    ("image", "base_os"): RENAMED_BASE_OS,
}
"""Where format 0 had values format 1 renamed: path -> {former value: what migrate writes, and why}. The
models refuse the former values with Renamed.why (gateway.py, image.py); structural.py adds MIGRATE_HINT."""


def read_version(data: dict[str, Any]) -> int | None:
    """The format a spec's data says it is: 0 without spec_version, the integer, or None for a non-integer."""
    if "spec_version" not in data:
        return UNVERSIONED
    value = data["spec_version"]
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def version_findings(data: dict[str, Any]) -> tuple[bool, list[Finding]]:
    """(whether the rest of the spec can be read by this release's rules, the findings about spec_version).

    Format 0 is read on (its other findings point at `orchestrator migrate` too); a format newer than this
    release is not: its keys and values mean what a later release says. A spec_version that is not an
    integer is left to the model's own error.
    """
    version = read_version(data)
    if version == UNVERSIONED:
        said = (
            "this spec has no spec_version: it is spec format 0"
            if "spec_version" not in data
            else "spec_version: 0 is spec format 0"
        )
        return True, [
            error(
                ("spec_version",),
                f"{said} (written before spec formats were numbered); this release reads spec format "
                f"{_readable()}",
                MIGRATE_FIX,
                code="spec-version",
            )
        ]
    if version is not None and version > SPEC_VERSION:
        return False, [
            error(
                ("spec_version",),
                f"spec format {version} is newer than this release of orchestrator reads (spec format "
                f"{_readable()})",
                "upgrade orchestrator to a release that reads this format, or use the orchestrator that "
                "wrote this spec",
                code="spec-version",
            )
        ]
    return True, []


def _readable() -> str:
    return " and ".join(str(v) for v in READABLE_VERSIONS)
