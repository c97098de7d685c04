"""Operator commands on the storage: `studiolo db upgrade|current`, `studiolo backup`,
`studiolo restore`. The main CLI calls `register(app)`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from studiolo.settings import Settings
from studiolo.store import migrations
from studiolo.store.backup import BackupError, RestoreInfo, backup, restore
from studiolo.store.engine import Store

__all__ = ["register"]

_Url = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="SQLAlchemy URL of the ledger (default: $STUDIOLO_DATABASE_URL, else sqlite:///studiolo.db)",
        show_default=False,
    ),
]


def _store(url: str | None) -> Store:
    return Store(url or Settings.from_env().database_url)


def db_upgrade(database_url: _Url = None) -> None:
    """Migrate the ledger's schema to the newest revision (safe to run from every replica)."""
    store = _store(database_url)
    try:
        revision = store.upgrade()
    finally:
        store.dispose()
    typer.echo(f"schema at {revision} ({store.dialect})")


def db_current(database_url: _Url = None) -> None:
    """Show the ledger's schema revision and the one this build expects."""
    store = _store(database_url)
    try:
        revision = store.schema_revision()
    finally:
        store.dispose()
    head = migrations.head()
    typer.echo(f"schema at {revision or 'none'}; this build expects {head}")
    if revision != head:
        raise typer.Exit(1)


def backup_cmd(
    path: Annotated[Path, typer.Argument(help="file to write (JSON lines; gzip if it ends in .gz)")],
    database_url: _Url = None,
) -> None:
    """Write every table, read on one consistent snapshot, to one portable file."""
    store = _store(database_url)
    try:
        info = backup(store, path)
    except BackupError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    finally:
        store.dispose()
    typer.echo(f"backup of {sum(info.rows.values())} rows ({info.source}, schema {info.schema}) → {path}")


def restore_cmd(
    path: Annotated[Path, typer.Argument(help="a file written by `studiolo backup`", exists=True)],
    database_url: _Url = None,
    previous_ledger: Annotated[
        str | None,
        typer.Option(
            "--previous-ledger",
            help="another ledger this restore replaces (a move between back-ends: the old one's URL)",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="replace the ledger without asking")] = False,
) -> None:
    """Replace the ledger with a backup and start a new authority incarnation.

    Every attempt and lease issued before the restore is dead; fences continue above every
    fence issued before. Revocations and key replacements of the replaced ledger win over the
    backup; tokens and verifier admissions it cannot vouch for are held, listed here, until
    reconfirmed. Works across back-ends (SQLite ↔ PostgreSQL).
    """
    if not yes:
        typer.confirm("This replaces every row of the ledger. Continue?", abort=True)
    store = _store(database_url)
    previous = Store(previous_ledger) if previous_ledger else None
    try:
        info = restore(store, path, previous)
    except BackupError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    finally:
        store.dispose()
        if previous is not None:
            previous.dispose()
    typer.echo(
        f"restored {sum(info.rows.values())} rows; incarnation {info.incarnation} "
        f"(was {info.previous_incarnation or 'none'}); fences continue above {info.fence_floor}"
    )
    _report_authority(info)


def _report_authority(info: RestoreInfo) -> None:
    carried = ", ".join(f"{k} {v}" for k, v in info.carried.items() if v) or "nothing"
    typer.echo(f"carried over from the replaced ledger: {carried}; service key {info.service_key}")
    if not info.held:
        typer.echo("nothing is held: the replaced ledger vouched for every token and admission")
        return
    typer.echo(f"held until reconfirmed ({len(info.held)} principals the replaced ledger cannot vouch for):")
    for h in info.held:
        typer.echo(
            f"  {h.principal_id} {h.kind} {h.name} ({h.project_id or 'service'}): {h.tokens} token(s), "
            f"admissions {list(h.admissions) or 'none'}, grants {list(h.grants) or 'none'}"
        )
    typer.echo(
        "reconfirm each: `studiolo reconfirm ID...` here (the operator; service admins first), "
        "then `studiolo principal reconfirm ID` as an admin; or rotate its tokens and revoke what it "
        "should not keep"
    )


def register(app: typer.Typer) -> None:
    """Add `db upgrade`, `db current`, `backup` and `restore` to the main CLI."""
    db = typer.Typer(help="The ledger's schema (Alembic migrations shared by SQLite and PostgreSQL).")
    db.command("upgrade")(db_upgrade)
    db.command("current")(db_current)
    app.add_typer(db, name="db")
    app.command("backup")(backup_cmd)
    app.command("restore")(restore_cmd)
