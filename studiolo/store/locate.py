"""Which project a row belongs to, read before a write takes its gate (`Store.project_of`)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["locate_project"]

_ID = re.compile(r"^[a-z]{2,4}_[A-Za-z0-9_-]{6,60}$")
# Prepared SQL on the driver connection (see `_raw`), in the driver's own placeholder style.
_QUERIES = {
    "task": "SELECT project_id FROM tasks WHERE id = {}",
    "attempt": "SELECT t.project_id FROM tasks t JOIN attempts a ON a.task_id = t.id WHERE a.id = {}",
    "candidate": "SELECT project_id FROM candidates WHERE id = {}",
}
_SQLITE = {kind: sql.format("?") for kind, sql in _QUERIES.items()}
_PSYCOPG = {kind: sql.format("%s") for kind, sql in _QUERIES.items()}


def locate_project(driver: Any, sqlite: bool, kind: str, ident: str) -> str | None:
    """The project of the task, attempt or candidate `ident` (None if there is none, or the
    id is malformed: the write itself then says so), read on a DB-API connection outside any
    transaction (SQLite's driver connections autocommit; on PostgreSQL the caller rolls back)."""
    if not isinstance(ident, str) or not _ID.match(ident):
        return None
    row = driver.execute((_SQLITE if sqlite else _PSYCOPG)[kind], (ident,)).fetchone()
    return str(row[0]) if row is not None and row[0] is not None else None
