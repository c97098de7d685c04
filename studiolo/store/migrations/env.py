"""Alembic environment: always online, on the connection `Store.upgrade` passes in."""

from __future__ import annotations

from alembic import context

from studiolo.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `studiolo db upgrade` (Store.upgrade), not alembic's CLI")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
