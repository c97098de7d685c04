"""Which project a row belongs to, read before a write takes its gate (`Store.project_of`)."""

from __future__ import annotations

import re

from studiolo.store._raw import Bare

__all__ = ["locate_project"]

_ID = re.compile(r"^[a-z]{2,4}_[A-Za-z0-9_-]{6,60}$")
_QUERIES = {
    "task": "SELECT project_id FROM tasks WHERE id = :id",
    "attempt": "SELECT t.project_id FROM tasks t JOIN attempts a ON a.task_id = t.id WHERE a.id = :id",
    "candidate": "SELECT project_id FROM candidates WHERE id = :id",
}


def locate_project(bare: Bare, kind: str, ident: str) -> str | None:
    """The project of the task, attempt or candidate `ident` (None if there is none, or the
    id is malformed: the write itself then says so), read outside any transaction."""
    if not isinstance(ident, str) or not _ID.match(ident):
        return None
    row = bare.one(_QUERIES[kind], {"id": ident})
    return str(row[0]) if row is not None and row[0] is not None else None
