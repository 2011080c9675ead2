"""`orchestrator` entry point: the global options, the command table and the exit codes.

Each command's module is imported when the command runs (or is listed by `orchestrator --help`), so a
command imports only what it uses: `orchestrator validate` does not load the runner, the simulator or the
benchmark client (lazy.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli import exits
from orchestrator.cli.groups import App
from orchestrator.cli.lazy import LazyGroup
from orchestrator.cli.sites import ROOT_ENV, set_root


class Commands(LazyGroup):
    """Every command, in the order `orchestrator --help` lists them: name -> "module:command function" or
    "module:Typer app" (a group of subcommands)."""

    lazy_commands = {
        "apply": "orchestrator.cli.apply_cmd:apply_command",
        "rollback": "orchestrator.cli.rollback_cmd:rollback_command",
        "heal": "orchestrator.cli.heal_cmd:heal_command",
        "plan": "orchestrator.cli.plan_cmd:plan_command",
        "history": "orchestrator.cli.history_cmd:history_command",
        "show": "orchestrator.cli.show_cmd:show_command",
        "status": "orchestrator.cli.status_cmd:status_command",
        "doctor": "orchestrator.cli.doctor_cmd:doctor_command",
        "bench": "orchestrator.cli.bench_cmd:bench_command",
        "validate": "orchestrator.cli.validate_cmd:validate_command",
        "migrate": "orchestrator.cli.migrate_cmd:migrate_command",
        "render": "orchestrator.cli.render_cmd:render_command",
        "phases": "orchestrator.cli.phases_cmd:phases_command",
        "schema": "orchestrator.cli.schema_cmd:schema_command",
        "docs": "orchestrator.cli.docs_cmd:docs_command",
        "examples": "orchestrator.cli.examples_cmd:examples_command",
        "sim": "orchestrator.cli.sim_hook:sim_app",
        "weights": "orchestrator.cli.weights_cmd:weights_app",
        "drift": "orchestrator.cli.drift_cmd:drift_app",
    }


app = App(
    cls=Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Declarative Ascend NPU + vLLM-Ascend deployment: validate, render and apply a site spec.",
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ascend-orchestrator")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        print(f"orchestrator {_version()}")
        raise typer.Exit(exits.OK)


@app.callback()
def _global(
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            metavar="DIR",
            envvar=ROOT_ENV,
            help="Project root holding inventories/ and .orchestrator/ (default: the nearest folder at or "
            "above the current one that has inventories/).",
        ),
    ] = None,
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    set_root(root)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI with the documented exit codes (orchestrator/cli/exits.py); never a stack trace."""
    try:
        rc = app(args=argv, prog_name="orchestrator", standalone_mode=False)
    except typer.TyperException as exc:  # a bad command line (typer's usage errors), shown with the usage
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"orchestrator: {exc.format_message()}", file=sys.stderr)
        sys.exit(exits.USAGE)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        print("orchestrator: interrupted", file=sys.stderr)
        sys.exit(exits.INTERRUPTED)
    except Exception as exc:  # a user never sees a stack trace unless they ask for it
        if os.environ.get("ORCHESTRATOR_DEBUG"):
            raise
        print(
            f"orchestrator: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug; run again with ORCHESTRATOR_DEBUG=1 for the traceback and report it.",
            file=sys.stderr,
        )
        sys.exit(exits.INTERNAL)
    sys.exit(rc if isinstance(rc, int) else exits.OK)


if __name__ == "__main__":
    main()
