"""Which project a row belongs to, read before a write takes its gate (`Store.project_of`)."""

from __future__ import annotations

import re

from sqlalchemy import Connection, bindparam, select

from studiolo.store import schema as s

__all__ = ["locate_project"]

_ID = re.compile(r"^[a-z]{2,4}_[A-Za-z0-9_-]{6,60}$")
_QUERIES = {
    "task": select(s.tasks.c.project_id).where(s.tasks.c.id == bindparam("i")),
    "attempt": select(s.tasks.c.project_id)
    .join(s.attempts, s.attempts.c.task_id == s.tasks.c.id)
    .where(s.attempts.c.id == bindparam("i")),
    "candidate": select(s.candidates.c.project_id).where(s.candidates.c.id == bindparam("i")),
}


def locate_project(conn: Connection, kind: str, ident: str) -> str | None:
    """The project of the task, attempt or candidate `ident` (None if there is none, or the
    id is malformed: the write itself then says so)."""
    if not isinstance(ident, str) or not _ID.match(ident):
        return None
    found = conn.execute(_QUERIES[kind], {"i": ident}).scalar()
    return str(found) if found is not None else None
