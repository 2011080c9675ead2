"""`orchestrator migrate SITE [--check]`: rewrite a spec of an older format in the current one, in place.

The steps are orchestrator/spec/migrate.py's; here: reading the file, printing each change, writing it
atomically (a temporary file beside it, renamed over it, with its mode) and validating the result.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.common import MaxFindings, MaxSpecSize, SiteArg, resolve
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console, say, summary_line
from orchestrator.spec.findings import format_finding
from orchestrator.spec.limits import DEFAULT_MAX_BYTES, LoadLimits

NEEDS_MIGRATION = 1
"""--check: the spec is of an older format (nothing written)."""


def migrate_command(
    site: SiteArg,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Print the changes and exit 1 when the spec needs migrating; write nothing.",
        ),
    ] = False,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Rewrite the spec in the current spec format, in place, keeping its comments, key order and quoting;
    print each change and validate the result."""
    from orchestrator.cli.check import check_file
    from orchestrator.spec.loader import load_file
    from orchestrator.spec.migrate import MigrateError, migrate_document

    path = resolve(site)
    out, err = console(), console(stderr=True)
    limits = LoadLimits(max_bytes=max_spec_size)
    doc, findings = load_file(path, limits)
    try:
        if doc is None:
            raise MigrateError.of(findings[0])
        migration = migrate_document(doc)
    except MigrateError as exc:
        err.print(format_finding(exc.finding(), str(path)), markup=False, style="red")
        err.print(f"{path}: not migrated; nothing was written", markup=False, style="bold red")
        raise typer.Exit(exits.INVALID_SPEC) from None
    if not migration.needed:
        out.print(f"{path}: spec format {migration.to_version}, nothing to migrate", markup=False)
        return
    verb = "would migrate" if check else "migrating"
    out.print(f"{path}: {verb} spec format {migration.from_version} -> {migration.to_version}", markup=False)
    for change in migration.changes:
        say(out, f"  {change.line()}")
    if migration.reformatted:
        lines = ", ".join(str(n) for n in migration.reformatted)
        say(out, f"  (ruamel.yaml also writes line(s) {lines} differently: spacing or style, same values)")
    if check:
        out.print(f"nothing written; `orchestrator migrate {site}` rewrites it in place", markup=False)
        raise typer.Exit(NEEDS_MIGRATION)
    try:
        write_in_place(path, migration.text)
    except OSError as exc:
        err.print(
            f"{path}: cannot write the migrated spec ({exc.strerror or exc}); nothing was changed. Fix: make "
            "the file and its folder writable for this user, or migrate a copy",
            markup=False,
            style="bold red",
        )
        raise typer.Exit(exits.CANT_CREATE) from None
    out.print(f"{path}: now spec format {migration.to_version}", markup=False)
    result, code = check_file(path, err, limits, max_findings)  # prints the findings, and the verdict if bad
    if code:
        raise typer.Exit(code)
    err.print(summary_line(result), markup=False, style="green")


def write_in_place(path: Path, text: str) -> None:
    """Replace the file (a symlink's target) with text at once: readers see the old or the new file, never
    half of one; the mode (and, when allowed, the owner) stay the file's."""
    target = path.resolve()
    st = target.stat()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".migrate")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        with contextlib.suppress(PermissionError):
            os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
