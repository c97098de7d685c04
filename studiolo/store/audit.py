"""The hash-chained audit log and the ledger's own metadata (keys, clock, incarnation)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Row, select

from studiolo.core.canonical import digest_json
from studiolo.core.model import Event
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, in_list, in_params

__all__ = ["GENESIS", "AuditRepo", "MetaRepo", "event_hash"]

# Prepared SQL (see `_raw`): every write runs these.
_INSERT_EVENT = (
    "INSERT INTO events (seq, project_id, kind, actor, subject, data, at, prev_hash, hash)"
    " VALUES (:seq, :project_id, :kind, :actor, :subject, :data, :at, :prev_hash, :hash)"
)
_LAST = "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1"
_META_GET_MANY = 'SELECT "key", value FROM meta WHERE "key" IN '
_META_SET = 'UPDATE meta SET value = :v WHERE "key" = :k'
_META_ADD = 'INSERT INTO meta ("key", value) VALUES (:k, :v)'
GENESIS = "sha256:" + "0" * 64


def event_hash(prev_hash: str, body: dict[str, Any]) -> str:
    return digest_json({"prev": prev_hash, "event": body})


def event_body(e: Event) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "project_id": e.project_id,
        "kind": e.kind,
        "actor": e.actor,
        "subject": e.subject,
        "data": dict(e.data),
        "at": repr(e.at),
    }


class AuditRepo:
    def __init__(self, conn: Connection) -> None:
        self._c = conn
        self._raw = Raw(conn)
        self._head: tuple[int, str] | None = None  # this transaction's view of the chain head

    def last(self) -> tuple[int, str]:
        if self._head is None:
            self._head = self._read_head()
        return self._head

    def _read_head(self) -> tuple[int, str]:
        row = self._raw.one(_LAST, {})
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)

    def append(
        self,
        project_id: str | None,
        kind: str,
        actor: str | None,
        subject: str | None,
        data: dict[str, Any],
        at: float,
    ) -> Event:
        seq, prev = self.last()
        draft = Event(seq + 1, project_id, kind, actor, subject, data, at, prev, "")
        digest = event_hash(prev, event_body(draft))
        self._raw.run(
            _INSERT_EVENT,
            {
                "seq": draft.seq,
                "project_id": project_id,
                "kind": kind,
                "actor": actor,
                "subject": subject,
                "data": dumps(data),
                "at": at,
                "prev_hash": prev,
                "hash": digest,
            },
        )
        self._head = (draft.seq, digest)
        return Event(draft.seq, project_id, kind, actor, subject, data, at, prev, digest)

    def events(
        self,
        project_id: str | None = None,
        after: int = 0,
        limit: int = 1000,
        subject: str | None = None,
    ) -> list[Event]:
        q = select(s.events).where(s.events.c.seq > after)
        if subject is not None:
            # A subject has few events: read them through ix_events_subject. Without table
            # statistics SQLite would pick ix_events_project (it also matches ORDER BY seq)
            # and scan the whole project; `project_id || ''` keeps that index out of play.
            q = q.where(s.events.c.subject == subject)
            if project_id is not None:
                q = q.where(s.events.c.project_id.concat("") == project_id)
        elif project_id is not None:
            q = q.where(s.events.c.project_id == project_id)
        rows = self._c.execute(q.order_by(s.events.c.seq).limit(limit))
        return [_event(r) for r in rows]

    def events_about(self, project_id: str, subjects: list[str], limit: int = 500) -> list[Event]:
        """The project's events whose subject is one of `subjects`, oldest first (the dashboard).
        Read through ix_events_subject, like `events(subject=...)`."""
        if not subjects:
            return []
        q = (
            select(s.events)
            .where(s.events.c.project_id.concat("") == project_id, s.events.c.subject.in_(subjects))
            .order_by(s.events.c.seq.desc())
            .limit(limit)
        )
        return [_event(r) for r in reversed(list(self._c.execute(q)))]

    def latest(self, project_id: str, limit: int) -> list[Event]:
        """The project's last `limit` events, oldest first (the dashboard)."""
        q = select(s.events).where(s.events.c.project_id == project_id)
        rows = self._c.execute(q.order_by(s.events.c.seq.desc()).limit(limit))
        return [_event(r) for r in reversed(list(rows))]

    def iter_all(self, batch: int = 5000, after: int = 0) -> Iterator[Event]:
        """Every event with a `seq` above `after`, in order, `batch` per query."""
        while True:
            chunk = self.events(after=after, limit=batch)
            if not chunk:
                return
            yield from chunk
            after = chunk[-1].seq


class MetaRepo:
    """The `meta` table, as this transaction sees it: a key read (or written) once is
    remembered for the rest of the transaction, so `get_many` can prefetch what it will need."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn
        self._raw = Raw(conn)
        self._seen: dict[str, str | None] = {}

    def get(self, key: str) -> str | None:
        if key not in self._seen:
            self.get_many((key,))
        return self._seen[key]

    def get_many(self, keys: tuple[str, ...]) -> dict[str, str]:
        rows = self._raw.all(_META_GET_MANY + in_list("k", len(keys)), in_params("k", keys))
        found = {str(k): str(v) for k, v in rows}
        self._seen.update({k: found.get(k) for k in keys})
        return found

    def set(self, key: str, value: str) -> None:
        if self._raw.run(_META_SET, {"k": key, "v": value}) == 0:
            self._raw.run(_META_ADD, {"k": key, "v": value})
        self._seen[key] = value


def _event(row: Row[Any]) -> Event:
    return Event(
        seq=int(row.seq),
        project_id=row.project_id,
        kind=row.kind,
        actor=row.actor,
        subject=row.subject,
        data=loads(row.data),
        at=row.at,
        prev_hash=row.prev_hash,
        hash=row.hash,
    )
