"""Everything in the ledger except the audit log and the clock: "changes nothing but the log"."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from studiolo.store import schema
from studiolo.store.engine import Store

_SKIP = {"events", "chains", "meta"}  # chains: the heads of the audit log


def snapshot(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    with store.engine.connect() as conn:
        for table in schema.metadata.sorted_tables:
            if table.name in _SKIP:
                continue
            rows = conn.execute(select(table)).all()
            out[table.name] = sorted((tuple(r) for r in rows), key=repr)
    return out


def event_count(store: Store) -> int:
    with store.engine.connect() as conn:
        return len(conn.execute(select(schema.events.c.seq)).all())
