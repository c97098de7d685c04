"""Alembic migrations shared by SQLite and PostgreSQL, configured in code (no alembic.ini).

`upgrade(conn)` runs inside the caller's transaction and locks (see `Store.upgrade`). A
ledger created before migrations existed (tables, no `alembic_version`) is stamped with the
baseline first. To add a revision, autogenerate against a database at head:
`alembic.command.revision(alembic_config(conn), message=..., autogenerate=True)`; the
contract test `test_the_migrations_build_exactly_the_declared_schema` fails until
`schema.py` and the migrations agree.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect

__all__ = ["BASELINE", "alembic_config", "current", "head", "known_revisions", "upgrade"]

BASELINE = "0001"
_HERE = Path(__file__).resolve().parent


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_HERE))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("version_locations", str(_HERE / "versions"))
    cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    revision = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert revision is not None
    return revision


def known_revisions() -> set[str]:
    return {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


def current(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def upgrade(conn: Connection, revision: str = "head") -> None:
    """Bring the schema on `conn` to `revision`, inside the connection's transaction."""
    cfg = alembic_config(conn)
    tables = set(inspect(conn).get_table_names())
    if "alembic_version" not in tables and "meta" in tables:
        command.stamp(cfg, BASELINE)  # created by metadata.create_all before migrations
    command.upgrade(cfg, revision)
