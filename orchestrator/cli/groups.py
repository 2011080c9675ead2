"""How `--help` reads: plain text that wraps to the terminal (80 columns at most), for every command.

typer's rich panels cut long defaults and environment variable names with an ellipsis, keep the line breaks
of a docstring (an exit-code sentence broke mid-line), and show a `<bool>` type on every flag (`--help
<bool>`). Click's plain help (rich_markup_mode=None) re-flows each paragraph to the width, shows a flag as
just its name and never cuts a word. On top of it, here:
- a group lists each command with its whole first paragraph, wrapped (click cuts it to one line and "...");
- a line never breaks at a hyphen: `--max-findings`, `npu-smi`, `a2-01` and `/etc/modules-load.d` stay
  whole.

Every `typer.Typer` of the CLI is an `App` (its commands are HelpCommands, its group a HelpGroup), so that
a new command cannot bring the panels back; tests/unit/test_cli_width.py renders every command's help at
80 columns.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer._click import Command, Context

NO_BREAK_HYPHEN = "\u2011"
"""Stands for "-" while click wraps a text (textwrap breaks after a hyphen, never after this one)."""


def summary(cmd: Command) -> str:
    """The command's first help paragraph on one line (its short_help when it has one)."""
    text = cmd.short_help or inspect.cleandoc(cmd.help or "").partition("\f")[0].partition("\n\n")[0]
    return " ".join(text.split())


def _keep(text: str) -> str:
    return text.replace("-", NO_BREAK_HYPHEN)


class HelpFormatter(typer.Context.formatter_class):  # type: ignore[misc, valid-type]
    """Click's help formatter, wrapping at spaces only."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(_keep(prog), _keep(args), prefix)

    def write_text(self, text: str) -> None:
        super().write_text(_keep(text))

    def write_dl(self, rows: Sequence[tuple[str, str]], *args: Any, **kwargs: Any) -> None:
        super().write_dl([(_keep(a), _keep(b)) for a, b in rows], *args, **kwargs)

    def getvalue(self) -> str:
        return str(super().getvalue()).replace(NO_BREAK_HYPHEN, "-")


class HelpContext(typer.Context):
    formatter_class = HelpFormatter


class HelpCommand(TyperCommand):
    context_class = HelpContext


class HelpGroup(TyperGroup):
    """A group whose help lists every command with its whole first paragraph, wrapped, never cut."""

    context_class = HelpContext

    def format_commands(self, ctx: Context, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, summary(cmd)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class App(typer.Typer):
    """typer.Typer with the CLI's plain help: its group a HelpGroup (unless `cls` says which subclass), its
    commands HelpCommands."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", HelpGroup)
        super().__init__(rich_markup_mode=None, **kwargs)

    def command(  # type: ignore[override]
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return super().command(name, cls=cls or HelpCommand, **kwargs)
