"""Commands imported when they are used (click's "lazily loading subcommands" pattern on typer's group).

`orchestrator validate` imports what validate needs, not the runner, the simulator or the benchmark client
(ansible_runner, docker, openai, httpx, numpy, ...): the root group names its commands up front and imports
a command's module only when the command is resolved (run, or listed by `orchestrator --help`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from difflib import get_close_matches
from typing import TYPE_CHECKING, ClassVar

import typer
import typer.main

from orchestrator.cli.groups import App, HelpGroup

if TYPE_CHECKING:
    from typer._click import Command, Context


class LazyGroup(HelpGroup):
    """A group whose `lazy_commands` (name -> "module:attribute") are imported on first use.

    The attribute is a command function (registered as `app.command(name)` would) or a Typer app
    (registered as `app.add_typer(app, name=name)` would), so the command, its options and its help are
    exactly what the eager registration made. Commands are listed in the mapping's order.
    """

    lazy_commands: ClassVar[Mapping[str, str]] = {}

    def list_commands(self, ctx: Context) -> list[str]:
        return [*self.lazy_commands, *(name for name in self.commands if name not in self.lazy_commands)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.commands[cmd_name] = self._load(cmd_name, self.lazy_commands[cmd_name])
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        # typer suggests close names ("Did you mean 'validate'?") from the commands loaded so far; suggest
        # from every name, loading none
        try:
            return super().resolve_command(ctx, args)
        except typer.TyperException as exc:
            if self.suggest_commands and args and "Did you mean" not in exc.message:
                matches = get_close_matches(args[0], self.list_commands(ctx))
                if matches:
                    suggestions = ", ".join(f"{m!r}" for m in matches)
                    exc.message = f"{exc.message.rstrip('.')}. Did you mean {suggestions}?"
            raise

    def _load(self, name: str, target: str) -> Command:
        module, _, attr = target.partition(":")
        obj = getattr(importlib.import_module(module), attr)
        holder = App(suggest_commands=self.suggest_commands)
        if isinstance(obj, typer.Typer):
            holder.add_typer(obj, name=name)
        else:
            holder.command(name)(obj)
        return typer.main.get_group(holder).commands[name]
