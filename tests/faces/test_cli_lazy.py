"""The lazy CLI: `--help` lists every command without importing one; each registry line
agrees with the module that defines the command; a module that fails to import is an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import typer
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from studiolo.faces.cli import COMMANDS, app
from studiolo.faces.cli._lazy import Lazy, registered
from studiolo.faces.cli._state import RootGroup

runner = CliRunner()


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").strip().split("\n\n")[0].split())


def test_every_module_registers_exactly_its_registry_lines() -> None:
    modules = {entry.module for entry in COMMANDS.values()}
    for module in sorted(modules):
        listed = {name for name, entry in COMMANDS.items() if entry.module == module}
        assert set(registered(module)) == listed, module


def test_each_registry_help_line_is_the_commands_own() -> None:
    for name, entry in COMMANDS.items():
        command = registered(entry.module)[name]
        assert entry.help == _first_paragraph(command.help), name


def test_a_command_that_runs_builds_only_itself() -> None:
    assert set(registered("studiolo.faces.cli.work", only="claim")) == {"claim"}
    assert set(registered("studiolo.faces.cli.work", only="task")) == {"task"}
    assert registered("studiolo.faces.cli.work", only="ghost") == {}


def test_a_group_builds_only_the_subcommand_that_runs() -> None:
    def subcommands(sub: str | None) -> set[str]:
        group = registered("studiolo.faces.cli.work", only="task", sub=sub)["task"]
        assert isinstance(group, TyperGroup)
        return set(group.commands)

    assert subcommands("show") == {"show"}
    everything = {"list", "show", "create", "cancel", "migrate", "reassign"}
    assert subcommands(None) == subcommands("--help") == subcommands("shw") == everything
    assert subcommands("show") == {"show"}  # the module's own group stayed whole
    nested = registered("studiolo.faces.cli.a2a", only="a2a", sub="intake")["a2a"]
    assert isinstance(nested, TyperGroup) and set(nested.commands) == {"intake"}
    result = runner.invoke(app, ["task", "shw"])
    assert result.exit_code == 2 and "show" in result.output


def test_help_lists_every_command_with_its_line() -> None:
    result = runner.invoke(app, ["--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name, entry in COMMANDS.items():
        assert any(
            line.split()[1:2] == [name] and entry.help[:40] in line for line in result.output.splitlines()
        ), name


def test_a_command_is_loaded_only_when_used() -> None:
    root = get_command(app)
    assert isinstance(root, TyperGroup)
    assert root.commands == {}
    result = runner.invoke(app, ["task", "--help"])
    assert result.exit_code == 0 and "show" in result.output


class _Broken(RootGroup):
    lazy: ClassVar[Mapping[str, Lazy]] = {
        "ghost": Lazy("studiolo.faces.cli._no_such_module", "A command whose module is missing.")
    }


def test_a_missing_module_is_an_error_not_a_missing_command() -> None:
    broken = typer.Typer(cls=_Broken)
    broken.callback()(lambda: None)
    listed = runner.invoke(broken, ["--help"])
    assert listed.exit_code == 0 and "ghost" in listed.output
    result = runner.invoke(broken, ["ghost"])
    assert isinstance(result.exception, ModuleNotFoundError)
    assert "No such command" not in result.output


def test_a_typo_is_answered_with_a_lazy_command_name() -> None:
    result = runner.invoke(app, ["tsk"])
    assert result.exit_code == 2 and "Did you mean 'task'?" in result.output
