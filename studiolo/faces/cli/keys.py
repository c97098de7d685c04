"""Operator commands on the service signing key: `studiolo keys rotate`, `studiolo keys list`.

The key that signs completion receipts lives in the ledger (`meta.service_key`). Rotating
it signs every later receipt with a new key; the JWKS (`/.well-known/jwks.json`) keeps
publishing every retired public key by `kid`, so earlier receipts stay verifiable.
"""

from __future__ import annotations

import dataclasses

import typer

from studiolo.faces.cli._output import Printer
from studiolo.faces.cli._state import JsonOpt, emit, state
from studiolo.faces.cli.ledger import DatabaseUrl, _coordinator, _settings

__all__ = ["register"]

keys_app = typer.Typer(help="The service key that signs completion receipts.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")


@keys_app.command("rotate")
def keys_rotate(ctx: typer.Context, database_url: DatabaseUrl = None, json_out: JsonOpt = False) -> None:
    """Sign new completion receipts with a new key; keep publishing the old one (audited)."""
    st = state(ctx, json_out)
    coordinator = _coordinator(_settings(database_url))
    try:
        rotation = coordinator.rotate_service_key()
    finally:
        coordinator.store.dispose()

    def human(con: Printer) -> None:
        con.print(f"receipts are now signed with kid {rotation.kid}; {rotation.previous_kid} stays published")

    emit(st, dataclasses.asdict(rotation), human)


@keys_app.command("list")
def keys_list(ctx: typer.Context, database_url: DatabaseUrl = None, json_out: JsonOpt = False) -> None:
    """The published keys (the JWKS): the signing key first, then retired ones."""
    st = state(ctx, json_out)
    coordinator = _coordinator(_settings(database_url))
    try:
        jwks = coordinator.jwks()
    finally:
        coordinator.store.dispose()

    def human(con: Printer) -> None:
        for i, key in enumerate(jwks["keys"]):
            con.print(f"{key['kid']}  {'signing' if i == 0 else 'retired'}  {key['x']}", highlight=False)

    emit(st, jwks, human)
