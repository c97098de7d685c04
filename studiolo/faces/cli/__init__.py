"""The `studiolo` command line: workers and admins over the HTTP API (`studiolo.client`),
operators over the local ledger (init, serve, run, demo, audit).

Configuration: flags > environment (`STUDIOLO_URL`, `STUDIOLO_TOKEN`, `STUDIOLO_PROJECT`) >
a TOML config file (`STUDIOLO_CONFIG`, default ~/.config/studiolo/config.toml), read only
through `studiolo.settings.ClientSettings`. Exit codes are documented in `_state`.
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from studiolo.faces.cli import admin, content, evidence, ledger, work
from studiolo.faces.cli._state import CliState, RootGroup
from studiolo.settings import ClientSettings

__all__ = ["CliState", "app", "build_app", "main"]

# Commands owned elsewhere, each exposing `register(app)`; absent modules are skipped.
_EXTERNAL = ("studiolo.faces.cli_study", "studiolo.verifier.cli", "studiolo.store.cli")


def _root(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option(help="service URL [env STUDIOLO_URL]")] = None,
    token: Annotated[str | None, typer.Option(help="bearer token [env STUDIOLO_TOKEN]")] = None,
    project: Annotated[str | None, typer.Option(help="default project id [env STUDIOLO_PROJECT]")] = None,
) -> None:
    """Studiolo: a completion ledger for AI agents that share one project."""
    base = ctx.obj if isinstance(ctx.obj, CliState) else CliState(ClientSettings.from_env())
    ctx.obj = CliState(base.settings.with_overrides(url=url, token=token, project=project), base.transport)


def build_app() -> typer.Typer:
    cli = typer.Typer(
        name="studiolo",
        cls=RootGroup,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    cli.callback()(_root)
    for module in (ledger, work, content, evidence, admin):
        module.register(cli)
    for name in _EXTERNAL:
        try:
            external = importlib.import_module(name)
        except ImportError:
            continue
        external.register(cli)
    return cli


app = build_app()


def main() -> None:
    app(prog_name="studiolo")
