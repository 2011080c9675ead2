"""`orchestrator sim`: the simulator's command group, the one place the product reaches the simulator.

The simulated cluster (package ascend_sim, docs/simulator.md) needs the Docker SDK, which the product does
not: it is the `sim` extra. With it installed, `sim_app` is ascend_sim.cli.sim_cmds's group; without it, every
`orchestrator sim ...` prints one sentence that says how to install it (no traceback), and the rest of the
CLI is unaffected.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

import typer

from orchestrator.cli.groups import App, HelpGroup

if TYPE_CHECKING:
    from typer._click import Context

SIM_COMMANDS = "ascend_sim.cli.sim_cmds"
NEEDS = ("ascend_sim", "docker")  # the simulator's package and its Docker SDK (the `sim` extra)
FAILED = 1  # as every sim command that fails (ascend_sim.cli.sim_cmds)


def missing() -> str | None:
    """The first module the simulator needs that is not installed; None when it can run."""
    for name in NEEDS:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def unavailable_message(module: str) -> str:
    return (
        f"The simulator is not installed (no Python module {module!r}). Fix: pip install "
        "'ascend-orchestrator[sim]' (in a checkout: ./scripts/bootstrap sim)."
    )


class Unavailable(HelpGroup):
    """`orchestrator sim` without the simulator: any arguments (--help too) print the fix and exit 1."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        typer.echo(unavailable_message(missing() or NEEDS[0]), err=True)
        ctx.exit(FAILED)
        return args  # not reached: ctx.exit raises


def _load() -> typer.Typer:
    if missing() is None:
        app: typer.Typer = importlib.import_module(SIM_COMMANDS).sim_app
        return app
    return App(
        cls=Unavailable,
        help="A simulated Ascend cluster in containers (needs the simulator: pip install "
        "'ascend-orchestrator[sim]').",
    )


sim_app = _load()
