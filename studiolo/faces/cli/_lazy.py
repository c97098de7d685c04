"""Commands registered by name and imported on first use, so that `studiolo --help` and a
worker command load neither the server nor each other's dependencies.

A `Lazy` entry names the module that defines a command (in its `register(app)`, the one
convention every command module follows) and carries the command's one-line help, so the
root's `--help` lists every command without importing any. A module that fails to import
is an error when its command is used, never a silently missing command; a test loads them
all and checks each help line against the command's own.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import ClassVar

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo, TyperInfo

__all__ = ["Lazy", "LazyGroup", "load"]

_LISTING = "studiolo.listing"  # set in ctx.meta while the root formats its own --help
_NEXT = "studiolo.next"  # set in ctx.meta while the root resolves a command: the word after it


@dataclass(frozen=True)
class Lazy:
    module: str  # adds the command in its `register(app: typer.Typer)`
    help: str  # the line `studiolo --help` shows


def registered(module: str, only: str | None = None, sub: str | None = None) -> dict[str, _click.Command]:
    """Every top-level command that `module.register` adds (or only the one named), by name.

    Typer turns a function into a command by reading its signature: a command that runs
    builds only itself, not its module's every other command; and of a group (`task`), with
    `sub` the word that follows it (`show`), only that subcommand."""
    app = typer.Typer()
    importlib.import_module(module).register(app)
    if only is not None:
        app.registered_commands = [c for c in app.registered_commands if c.name == only]
        app.registered_groups = [_narrowed(g, sub) for g in app.registered_groups if g.name == only]
    app.callback()(_group)  # a callback makes a group even of a single command
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return dict(group.commands)


def _narrowed(info: TyperInfo, sub: str | None) -> TyperInfo:
    """The group with only its subcommand `sub`; the whole group if it has none by that name
    (`--help`, a typo: click then lists or suggests among all of them)."""
    group = info.typer_instance
    if sub is None or group is None:
        return info
    commands = [c for c in group.registered_commands if _name(c) == sub]
    groups = [g for g in group.registered_groups if g.name == sub]
    if not commands and not groups:
        return info
    narrowed = copy.copy(group)  # the module's own Typer stays whole
    narrowed.registered_commands, narrowed.registered_groups = commands, groups
    out = copy.copy(info)
    out.typer_instance = narrowed
    return out


def _name(command: CommandInfo) -> str | None:
    if command.name:
        return command.name
    return typer.main.get_command_name(command.callback.__name__) if command.callback else None


def _group() -> None:
    pass


def load(name: str, entry: Lazy, sub: str | None = None) -> _click.Command:
    """Import `entry.module` and return its command `name` (of a group, only `sub` if named)."""
    command = registered(entry.module, only=name, sub=sub).get(name)
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
        command = self.commands[cmd_name] = load(cmd_name, entry, ctx.meta.get(_NEXT))
        return command

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        ctx.meta[_NEXT] = args[1] if len(args) > 1 else None  # a group's subcommand, if named
        try:
            return super().resolve_command(ctx, args)
        except _click.exceptions.UsageError as exc:  # suggest among the lazy names too
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise
        finally:
            del ctx.meta[_NEXT]

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        ctx.meta[_LISTING] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[_LISTING]
