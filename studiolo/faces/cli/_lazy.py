"""Commands registered by name and imported on first use, so that `studiolo --help` and a
worker command load neither the server nor each other's dependencies.

A `Lazy` entry names the module that defines a command (in its `register(app)`, the one
convention every command module follows) and carries the command's one-line help, so the
root's `--help` lists every command without importing any. A module that fails to import
is an error when its command is used, never a silently missing command; a test loads them
all and checks each help line against the command's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import ClassVar

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

__all__ = ["Lazy", "LazyGroup", "load"]

_LISTING = "studiolo.listing"  # set in ctx.meta while the root formats its own --help


@dataclass(frozen=True)
class Lazy:
    module: str  # adds the command in its `register(app: typer.Typer)`
    help: str  # the line `studiolo --help` shows


def registered(module: str, only: str | None = None) -> dict[str, _click.Command]:
    """Every top-level command that `module.register` adds (or only the one named), by name.

    Typer turns a function into a command by reading its signature: a command that runs
    builds only itself, not its module's every other command."""
    app = typer.Typer()
    importlib.import_module(module).register(app)
    if only is not None:
        app.registered_commands = [c for c in app.registered_commands if c.name == only]
        app.registered_groups = [g for g in app.registered_groups if g.name == only]
    app.callback()(_group)  # a callback makes a group even of a single command
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return dict(group.commands)


def _group() -> None:
    pass


def load(name: str, entry: Lazy) -> _click.Command:
    """Import `entry.module` and return its command `name`."""
    command = registered(entry.module, only=name).get(name)
    if command is None:
        raise LookupError(f"{entry.module}.register adds no command {name!r}")
    return command


class LazyGroup(TyperGroup):
    """A Typer group whose `lazy` commands are imported when invoked (or asked for help)."""

    lazy: ClassVar[Mapping[str, Lazy]] = {}

    def list_commands(self, ctx: _click.Context) -> list[str]:
        eager = super().list_commands(ctx)
        return [*eager, *(name for name in self.lazy if name not in self.commands)]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        command = super().get_command(ctx, cmd_name)
        entry = self.lazy.get(cmd_name)
        if command is not None or entry is None:
            return command
        if ctx.meta.get(_LISTING):
            return TyperCommand(name=cmd_name, help=entry.help)  # a stand-in, only to be listed
        command = self.commands[cmd_name] = load(cmd_name, entry)
        return command

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except _click.exceptions.UsageError as exc:  # suggest among the lazy names too
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[_LISTING]
