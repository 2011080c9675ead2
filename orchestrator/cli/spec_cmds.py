"""The commands that only read the spec: validate, render, phases, schema, docs, examples.

Light to import (`orchestrator validate --help` builds its options from this module alone): the validation,
render, planning and docs layers are imported by the command that runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.common import (
    EXIT_INVALID,
    Format,
    FormatOption,
    MaxFindings,
    MaxSpecSize,
    SiteArg,
    format_option,
    load,
    render_into,
    resolve,
)
from orchestrator.cli.findings_json import result_json
from orchestrator.cli.output import DEFAULT_MAX_FINDINGS, console, print_findings, print_plan, summary_line
from orchestrator.cli.sites import example_sites
from orchestrator.spec.findings import Finding, format_finding
from orchestrator.spec.limits import DEFAULT_MAX_BYTES, LoadLimits

if TYPE_CHECKING:
    from orchestrator.pipeline import ValidationResult


def validate_command(
    site: SiteArg,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print only the findings (on stderr), no plan and no verdict line: the exit code says "
            "whether the spec is valid.",
        ),
    ] = False,
    fmt: Annotated[Format, format_option("for tools: every finding and the verdict, no plan")] = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Check the spec (structure, cross-field rules, capacity) and print the derived plan."""
    from orchestrator.cli.check import folder_findings
    from orchestrator.pipeline import validate_file

    if fmt is Format.json:
        result = validate_file(resolve(site), LoadLimits(max_bytes=max_spec_size))
        result = result.with_findings([*folder_findings(result), *_controller_warnings(result)])
        print(result_json(result))
        raise typer.Exit(exits.OK if result.ok else EXIT_INVALID)
    result = load(site, max_spec_size, max_findings)  # prints the spec's findings; exits 2 when invalid
    err = console(stderr=True)
    more = _controller_warnings(result)
    for f in more:
        err.print(format_finding(f, result.filename), style="yellow", markup=False)
    if not quiet:  # on stderr with the findings: stdout holds the plan alone, whatever this machine has
        err.print(summary_line(result.with_findings(more)), markup=False, style="green")
    if not quiet and result.plan is not None:
        print_plan(console(), result.plan)


def _controller_warnings(result: ValidationResult) -> list[Finding]:
    """What plan/apply/drift would refuse for on this machine (secrets that do not resolve, missing
    controller files), as warnings: validate may run elsewhere than the controller; then what the spec
    leaves unverified or unmonitored (orchestrator/validation/coverage.py)."""
    from orchestrator.planning.phases import PHASE_NAMES
    from orchestrator.validation.controller import DRIFT, as_warnings, controller_findings, located
    from orchestrator.validation.coverage import coverage_warnings

    if result.spec is None or not result.ok:
        return []
    found = controller_findings(result.spec, Path(result.filename).parent, [*PHASE_NAMES, DRIFT])
    return located([*as_warnings(found), *coverage_warnings(result.spec)], result)


def render_command(
    site: SiteArg,
    out: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Output folder (default: beside the spec).")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace (or remove) inventory files edited by hand since render wrote them."
        ),
    ] = False,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Write the Ansible inventory (hosts.yml, group_vars/, host_vars/) beside the spec.

    Only files render wrote are replaced or removed (recorded in .inventory-manifest.json); your own files
    in the folder (vault.yml, custom group_vars) are left alone.
    """
    result = load(site, max_spec_size, max_findings)
    target = out or Path(result.filename).parent
    outcome = render_into(result, target, force)
    console().print(f"rendered {len(outcome.files)} files into {target}", markup=False)


def phases_command(
    site: SiteArg,
    fmt: FormatOption = Format.table,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Print the phases an apply runs, in order, the hosts each touches and what it does there."""
    from orchestrator.cli.phase_lines import phases_json, print_phases
    from orchestrator.planning.phases import plan_phases

    result = load(site, max_spec_size, max_findings)
    if result.spec is None or result.plan is None:  # _load exits on an invalid spec
        raise typer.Exit(EXIT_INVALID)
    phases = plan_phases(result.spec, result.plan)
    if fmt is Format.json:
        print(json.dumps(phases_json(result.spec.site, phases)))
        return
    print_phases(console(), phases)


def schema_command() -> None:
    """Print the JSON Schema of the site spec (for editor completion)."""
    from orchestrator.spec.site import SiteSpec

    print(json.dumps(SiteSpec.model_json_schema(), indent=2, sort_keys=True))


def docs_command(
    write: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Write the reference to this file.")
    ] = None,
    check: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Fail if this file is not up to date.")
    ] = None,
    troubleshooting: Annotated[
        bool,
        typer.Option(
            "--troubleshooting",
            help="The troubleshooting guide (docs/troubleshooting.md, from doctor's rules) instead.",
        ),
    ] = False,
) -> None:
    """Print (or write, or check) the spec reference generated from the models, or with --troubleshooting
    the troubleshooting guide generated from doctor's rules."""
    if troubleshooting:
        from orchestrator.doctor.troubleshooting import troubleshooting_reference

        text = troubleshooting_reference()
    else:
        from orchestrator.spec.docs import spec_reference

        text = spec_reference()
    if check is not None:
        if not check.is_file() or check.read_text(encoding="utf-8") != text:
            flag = " --troubleshooting" if troubleshooting else ""
            console(stderr=True).print(
                f"{check} is stale: run 'orchestrator docs{flag} --write {check}'", markup=False
            )
            raise typer.Exit(1)
        return
    if write is not None:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(text, encoding="utf-8")
        return
    print(text)


def examples_command(
    write: Annotated[
        bool, typer.Option("--write", help="Re-render the committed inventories in place (deliberate).")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(metavar="OUT", help="Render into OUT/<site>/ instead (nothing committed changes)."),
    ] = None,
    max_spec_size: MaxSpecSize = DEFAULT_MAX_BYTES,
    max_findings: MaxFindings = DEFAULT_MAX_FINDINGS,
) -> None:
    """Validate every site under inventories/, print its plan and phases, and check that its committed
    inventory is what render writes today (exit 1 when stale). Writes nothing unless --write or --out."""
    from orchestrator.cli.phase_lines import print_phases
    from orchestrator.pipeline import validate_file
    from orchestrator.planning.phases import plan_phases
    from orchestrator.render import as_input, render_texts

    failed = stale = 0
    for path in example_sites():
        result = validate_file(path, LoadLimits(max_bytes=max_spec_size))
        con = console()
        con.rule(str(path))
        print_findings(console(stderr=True), result, max_findings)
        if not result.ok or result.spec is None or result.plan is None:
            failed += 1
            con.print(summary_line(result), markup=False)
            continue
        print_plan(con, result.plan)
        if write or out is not None:
            target = out / path.parent.name if out else path.parent
            written = render_into(result, target).files
            con.print(f"rendered {len(written)} files into {target}", markup=False)
        else:
            changed = _stale_files(path.parent, render_texts(as_input(result)))
            if changed:
                stale += 1
                con.print(
                    f"STALE: {', '.join(changed)} differ from what render writes; review the change, then "
                    "run `orchestrator examples --write`",
                    markup=False,
                )
            else:
                con.print("committed inventory is up to date", markup=False)
        con.print("phases:", markup=False)
        print_phases(con, plan_phases(result.spec, result.plan), indent="  ")
    if failed:
        raise typer.Exit(EXIT_INVALID)
    if stale:
        raise typer.Exit(1)


def _stale_files(folder: Path, texts: dict[str, str]) -> list[str]:
    out = []
    for rel, text in sorted(texts.items()):
        target = folder / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            out.append(rel)
    return out
