"""The hash-chained audit log and the ledger's own metadata (keys, clock, incarnation).

One chain per project and one for events of no project (the ledger chain): an event's
`prev_hash` is the hash of the previous event *of its chain*. `seq` is global and unique,
strictly increasing within a chain (the chain's gate orders its writers); across chains
seqs may commit out of order on PostgreSQL (see docs/concepts.md). Events up to meta
`chain_split` predate per-project chains and link in the one global chain instead.

Two hashing rules (docs/concepts.md, "The audit chain"). Events up to meta `detail_split`
(written before migration 0016) hash their whole `data`: `event_hash(prev, event_body(e))`.
Later events hash a commitment to it: the header fields, `detail` (the digest of the
canonical `data`) and `format: 2` (`detail_hash`), so retention can replace an aged event's
`data` by a redaction marker (`redaction`) that keeps the digest, and the chain still
verifies. Events up to `detail_split` are never redacted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from studiolo.core.canonical import digest_json
from studiolo.core.model import Event
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, in_list, in_params
from studiolo.store.gate import LEDGER_CHAIN, Gate, GateTooNarrow, chain_of

__all__ = [
    "DETAIL_FORMAT",
    "GENESIS",
    "NEVER_SPLIT",
    "REDACTED",
    "AuditRepo",
    "ChainCheck",
    "Head",
    "MetaRepo",
    "chained_hash",
    "detail_hash",
    "event_hash",
    "redaction",
    "verify_log",
]

# Prepared SQL (see `_raw`): every write runs these.
_INSERT_EVENT = (
    "INSERT INTO events (seq, project_id, kind, actor, subject, data, at, prev_hash, hash)"
    " VALUES (:seq, :project_id, :kind, :actor, :subject, :data, :at, :prev_hash, :hash)"
)
_LAST = "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1"
_MAX_SEQ = "SELECT coalesce(max(seq), 0) FROM events"
# SQLite's first append of a write: the highest seq and the chain's head, one read.
_MAX_SEQ_AND_HEAD = (
    "SELECT (SELECT coalesce(max(seq), 0) FROM events), h.seq, h.hash, h.at"
    " FROM (SELECT 1) AS one LEFT JOIN chains AS h ON h.chain = :c"
)
_NEXTVAL = "SELECT nextval('events_seq')"
_HEAD = "SELECT seq, hash, at FROM chains WHERE chain = :c"
_HEADS = "SELECT chain, seq, hash FROM chains"
_SET_HEAD = "UPDATE chains SET seq = :s, hash = :h, at = :a WHERE chain = :c"
_NEW_HEAD = "INSERT INTO chains (chain, seq, hash, at) VALUES (:c, :s, :h, :a)"
_LATEST_AT = "SELECT max(at) FROM chains"
_META_GET_MANY = 'SELECT "key", value FROM meta WHERE "key" IN '
_META_SET = 'UPDATE meta SET value = :v WHERE "key" = :k'
_META_ADD = 'INSERT INTO meta ("key", value) VALUES (:k, :v)'
_EVENT_COLUMNS = "seq, project_id, kind, actor, subject, data, at, prev_hash, hash"
# A subject's events in a project: read through ix_events_subject (see `events`).
_EVENTS_OF_SUBJECT = (
    f"SELECT {_EVENT_COLUMNS} FROM events WHERE seq > :after AND subject = :subject"
    " AND (project_id || '') = :p ORDER BY seq LIMIT :n"
)
# A subject's newest event of some kinds in a project (a refusal's details): newest first
# along ix_events_subject.
_LATEST_OF_SUBJECT = (
    f"SELECT {_EVENT_COLUMNS} FROM events WHERE subject = :subject AND (project_id || '') = :p AND kind IN "
)
# New events of some projects (the event streams' feed): read along seq from `after` (the
# newest few), not through ix_events_project once per project: `project_id || ''` keeps
# that index out of play.
_EVENTS_OF_PROJECTS = f"SELECT {_EVENT_COLUMNS} FROM events WHERE seq > :after AND (project_id || '') IN "
GENESIS = "sha256:" + "0" * 64
DETAIL_FORMAT = 2  # the hashing rule of events after meta `detail_split`
NEVER_SPLIT = 2**62  # `detail_split` of a ledger not yet migrated: every event is before it
REDACTED = "~redacted"  # the one key of a redacted event's `data` (no event kind uses it)
_UPDATE_DATA = "UPDATE events SET data = :d WHERE seq = :s"
_EVENTS = f"SELECT {_EVENT_COLUMNS} FROM events"


def event_hash(prev_hash: str, body: dict[str, Any]) -> str:
    """The rule of events up to meta `detail_split`: the hash covers the whole `data`."""
    return digest_json({"prev": prev_hash, "event": body})


def detail_hash(
    prev_hash: str,
    seq: int,
    project_id: str | None,
    kind: str,
    actor: str | None,
    subject: str | None,
    at: float,
    detail: str,
) -> str:
    """The rule of later events: the hash covers the header and `detail`, the digest of the
    canonical `data` (`digest_json(data)`), so `data` may go while the digest stays."""
    header = {
        "seq": seq,
        "project_id": project_id,
        "kind": kind,
        "actor": actor,
        "subject": subject,
        "at": repr(at),
        "detail": detail,
        "format": DETAIL_FORMAT,
    }
    return digest_json({"prev": prev_hash, "event": header})


def redaction(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A redaction marker's fields (`digest`, `at`, `by`, `reason`) if `data` is one."""
    if len(data) != 1 or REDACTED not in data:
        return None
    marker = data[REDACTED]
    if not isinstance(marker, Mapping) or not isinstance(marker.get("digest"), str):
        return None
    return marker


def chained_hash(prev_hash: str, e: Event) -> str:
    """`e`'s hash under the later rule: over its detail's digest (a marker's, if redacted)."""
    marker = redaction(e.data)
    detail = str(marker["digest"]) if marker is not None else digest_json(dict(e.data))
    return detail_hash(prev_hash, e.seq, e.project_id, e.kind, e.actor, e.subject, e.at, detail)


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


@dataclass(frozen=True)
class Head:
    """A chain's last event (seq 0 and GENESIS for a chain with no event yet)."""

    seq: int
    hash: str
    at: float | None
    stored: bool  # False: no `chains` row yet


EMPTY = Head(0, GENESIS, None, False)


class AuditRepo:
    """Appends to the chains the transaction's gate covers; reads the log.

    `sequence`: PostgreSQL, where seqs come from `events_seq` (concurrent chains); on SQLite
    the one writer takes max(seq) + 1. The store primes the first chain head and seq from the
    statement that starts a write, so the common append reads nothing.
    """

    def __init__(self, conn: Connection, gate: Gate | None = None, *, sequence: bool = False) -> None:
        self._raw = Raw(conn)
        self.gate = gate or Gate.whole_ledger()
        self._sequence = sequence
        self._heads: dict[str, Head] = {}
        self._seqs: list[int] = []  # allocated, not yet used
        self._max: int | None = None  # SQLite: the highest seq so far in this transaction
        self.settle: Callable[[], object] | None = None  # reads a write's start (engine._Start)
        self.appended: list[Event] = []  # by this transaction, in order

    def prime(self, chain: str | None, head: Head | None, seq: int) -> None:
        """What the statement that started the write read: a chain's head, the first seq."""
        if chain is not None and head is not None:
            self._heads[chain] = head
        self._seqs.append(seq)

    def latest_at(self) -> float | None:
        """The time of the latest event of any chain (a whole-ledger write's clock guard)."""
        row = self._raw.one(_LATEST_AT, {})
        return float(row[0]) if row and row[0] is not None else None

    def _settled(self) -> None:
        if self.settle is not None:
            self.settle()

    def head(self, project_id: str | None) -> Head:
        self._settled()
        chain = chain_of(project_id)
        if chain not in self._heads:
            row = self._raw.one(_HEAD, {"c": chain})
            self._heads[chain] = _head(row)
        return self._heads[chain]

    def _start(self, chain: str) -> None:
        """SQLite, before the write's first seq: read the highest seq, with the chain's head."""
        if self._sequence or self._max is not None:
            return
        row = self._raw.one(_MAX_SEQ_AND_HEAD, {"c": chain})
        assert row is not None
        self._max = int(row[0])
        if chain not in self._heads:
            self._heads[chain] = _head(row[1:] if row[1] is not None else None)

    def last(self) -> tuple[int, str]:
        """The event with the highest seq in this snapshot, across chains (0 and GENESIS if none)."""
        row = self._raw.one(_LAST, {})
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)

    def next_seq(self, project_id: str | None) -> int:
        """The seq the next event appended to the project's chain gets (a completion's
        commit version): reserved now, so it can be signed before the event is written."""
        chain = chain_of(project_id)
        self._require(chain)
        self._settled()
        self._start(chain)
        if not self._seqs:
            self._seqs.append(self._allocate())
        return self._seqs[0]

    def _allocate(self) -> int:
        if self._sequence:
            return int(_first(self._raw.one(_NEXTVAL, {})))
        if self._max is None:
            self._max = int(_first(self._raw.one(_MAX_SEQ, {})))
        self._max += 1
        return self._max

    def _require(self, chain: str) -> None:
        if not self.gate.covers(chain):
            raise GateTooNarrow(self.gate.widened(chain))

    def append(
        self,
        project_id: str | None,
        kind: str,
        actor: str | None,
        subject: str | None,
        data: dict[str, Any],
        at: float,
    ) -> Event:
        chain = chain_of(project_id)
        self._require(chain)
        self._settled()
        self._start(chain)
        head = self.head(project_id)
        seq = self._seqs.pop(0) if self._seqs else self._allocate()
        if seq <= head.seq:
            raise RuntimeError(
                f"event seq {seq} is not above its chain's head {head.seq}: events_seq is behind"
            )
        row = {"seq": seq, "project_id": project_id, "kind": kind, "actor": actor, "subject": subject}
        digest = detail_hash(head.hash, seq, project_id, kind, actor, subject, at, digest_json(data))
        self._raw.send(
            _INSERT_EVENT, {**row, "data": dumps(data), "at": at, "prev_hash": head.hash, "hash": digest}
        )
        self._raw.send(_SET_HEAD if head.stored else _NEW_HEAD, {"c": chain, "s": seq, "h": digest, "a": at})
        self._heads[chain] = Head(seq, digest, at, True)
        event = Event(seq, project_id, kind, actor, subject, data, at, head.hash, digest)
        self.appended.append(event)
        return event

    def detail_expired(
        self, project_id: str, split: int, before: float, limit: int, held: Sequence[str]
    ) -> list[Event]:
        """The project's events after `split` made before `before` whose detail is still there,
        oldest first, leaving out any that names a held task (its id as subject or anywhere in
        its detail)."""
        where = " WHERE project_id = :p AND seq > :split AND at < :before AND data NOT LIKE :redacted"
        params: dict[str, Any] = {
            "p": project_id,
            "split": split,
            "before": before,
            "redacted": '{"' + REDACTED + '"%',
            "n": limit,
        }
        for i, task_id in enumerate(held):
            where += f" AND (subject IS NULL OR subject <> :t{i}) AND data NOT LIKE :d{i}"
            params |= {f"t{i}": task_id, f"d{i}": f"%{task_id}%"}
        return [_event_of(r) for r in self._raw.all(_EVENTS + where + " ORDER BY seq LIMIT :n", params)]

    def redact(self, seq: int, marker: Mapping[str, Any]) -> None:
        """Replace an event's `data` by a redaction marker (the hash and the chain stay)."""
        self._raw.run(_UPDATE_DATA, {"s": seq, "d": dumps({REDACTED: dict(marker)})})

    def chain_events(self, chain: str, after: int, limit: int = 5000) -> list[Event]:
        """The events of one chain ("" for the ledger chain) with a seq above `after`."""
        where = " WHERE project_id IS NULL" if chain == LEDGER_CHAIN else " WHERE project_id = :c"
        sql = _EVENTS + where + " AND seq > :after ORDER BY seq LIMIT :n"
        return [_event_of(r) for r in self._raw.all(sql, {"c": chain, "after": after, "n": limit})]

    def heads(self) -> dict[str, tuple[int, str]]:
        """Every chain's recorded head: chain ("" for the ledger chain) → (seq, hash)."""
        return {str(c): (int(q), str(h)) for c, q, h in self._raw.all(_HEADS, {})}

    def events(
        self,
        project_id: str | None = None,
        after: int = 0,
        limit: int = 1000,
        subject: str | None = None,
    ) -> list[Event]:
        if subject is not None and project_id is not None:
            return self.events_of_subject_later(project_id, subject, after, limit)()
        where = " WHERE seq > :after"
        if subject is not None:  # and no project (with one: `_EVENTS_OF_SUBJECT`)
            where += " AND subject = :subject"
        elif project_id is not None:
            where += " AND project_id = :p"
        params = {"after": after, "subject": subject, "p": project_id, "n": limit}
        return [_event_of(r) for r in self._raw.all(_EVENTS + where + " ORDER BY seq LIMIT :n", params)]

    def events_of_subject_later(
        self, project_id: str, subject: str, after: int = 0, limit: int = 1000
    ) -> Callable[[], list[Event]]:
        """`events(project_id, after, limit, subject)`, its read sent now and answered when
        called (`Raw.later`)."""
        params = {"after": after, "subject": subject, "p": project_id, "n": limit}
        return self._raw.later_as(_EVENTS_OF_SUBJECT, params, _event_of)

    def latest_of(self, project_id: str, subject: str, kinds: Sequence[str]) -> Event | None:
        """The subject's newest event of one of `kinds` in the project, if any."""
        sql = _LATEST_OF_SUBJECT + in_list("k", len(kinds)) + " ORDER BY seq DESC LIMIT 1"
        rows = self._raw.all(sql, {"subject": subject, "p": project_id, **in_params("k", list(kinds))})
        return _event_of(rows[0]) if rows else None

    def events_of(self, project_ids: Sequence[str], after: int, limit: int) -> list[Event]:
        """The events of any of `project_ids` after `after`, oldest first, at most `limit`."""
        ids = sorted(set(project_ids))
        if not ids:
            return []
        sql = _EVENTS_OF_PROJECTS + in_list("p", len(ids)) + " ORDER BY seq LIMIT :n"
        return [_event_of(r) for r in self._raw.all(sql, {"after": after, "n": limit, **in_params("p", ids)})]

    def events_about(self, project_id: str, subjects: list[str], limit: int = 500) -> list[Event]:
        """The project's events whose subject is one of `subjects`, oldest first (the dashboard).
        Read through ix_events_subject, like `events(subject=...)`."""
        if not subjects:
            return []
        where = " WHERE (project_id || '') = :p AND subject IN " + in_list("s", len(subjects))
        params = {"p": project_id, "n": limit} | in_params("s", subjects)
        rows = self._raw.all(_EVENTS + where + " ORDER BY seq DESC LIMIT :n", params)
        return [_event_of(r) for r in reversed(rows)]

    def latest(
        self, project_id: str, limit: int, before: int | None = None, kind: str | None = None
    ) -> list[Event]:
        """The project's last `limit` events, oldest first (the dashboard); only those below
        seq `before` and of kind `kind` if given (the Activity page's paging and filter)."""
        where = " WHERE project_id = :p"
        if before is not None:
            where += " AND seq < :before"
        if kind is not None:
            where += " AND kind = :kind"
        params = {"p": project_id, "before": before, "kind": kind, "n": limit}
        rows = self._raw.all(_EVENTS + where + " ORDER BY seq DESC LIMIT :n", params)
        return [_event_of(r) for r in reversed(rows)]

    def iter_all(self, batch: int = 5000, after: int = 0) -> Iterator[Event]:
        """Every event with a `seq` above `after`, in order, `batch` per query. Paging by seq
        across chains is only safe inside one snapshot (one transaction): across transactions
        a lower seq of another chain may commit later."""
        while True:
            chunk = self.events(after=after, limit=batch)
            if not chunk:
                return
            yield from chunk
            after = chunk[-1].seq


@dataclass
class ChainCheck:
    """Verifies the audit log fed in seq order: every hash recomputes, every event links to
    the previous event of its chain (of the whole log up to `split`), and every chain ends at
    the head recorded for it (`finish`), so a removed tail is found too."""

    split: int
    events: int = 0
    detail_split: int = NEVER_SPLIT  # meta `detail_split`: later events hash their detail's digest
    problem: str = ""
    bad_seq: int | None = None
    _global: str = GENESIS
    _last: dict[str, tuple[int, str]] = field(default_factory=dict)

    def feed(self, e: Event) -> bool:
        """Check one more event; False (and `problem` set) at the first fault."""
        self.events += 1
        chain = chain_of(e.project_id)
        if e.seq <= self.split:
            expected = self._global
            if e.seq != self.events:
                return self._fail(e.seq, "sequence gap")
        else:
            expected = self._last.get(chain, (0, GENESIS))[1]
        if e.prev_hash != expected:
            return self._fail(e.seq, "broken link")
        if not self._hashes(expected, e):
            return self._fail(e.seq, "event altered")
        if e.seq <= self.split:
            self._global = e.hash
        self._last[chain] = (e.seq, e.hash)
        return True

    def _hashes(self, prev: str, e: Event) -> bool:
        marker = redaction(e.data)
        if e.seq > self.detail_split:
            return chained_hash(prev, e) == e.hash and (marker is None or _marker_ok(marker))
        if marker is None and event_hash(prev, event_body(e)) == e.hash:
            return True
        # Written by this build into a ledger not yet migrated (a restore appends before the
        # upgrade): the later rule, never redacted.
        return marker is None and chained_hash(prev, e) == e.hash

    def finish(self, recorded: dict[str, tuple[int, str]]) -> bool:
        for chain in sorted(set(recorded) | set(self._last)):
            if recorded.get(chain) != self._last.get(chain):
                where = recorded.get(chain, self._last.get(chain, (0, "")))[0]
                return self._fail(where, f"chain {chain or '(ledger)'} does not end at its recorded head")
        return True

    def state(self) -> dict[str, tuple[int, str]]:
        """Each chain's last verified event: (seq, hash)."""
        return dict(self._last)

    def resume(self, state: dict[str, tuple[int, str]]) -> None:
        """Continue after an earlier walk that verified up to `state` (see `state`)."""
        self._last = dict(state)

    def head(self) -> str:
        """One digest of every chain's head (GENESIS for an empty log)."""
        if not self._last:
            return GENESIS
        return digest_json({c: h for c, (_, h) in sorted(self._last.items())})

    def _fail(self, seq: int, problem: str) -> bool:
        self.bad_seq, self.problem = seq, problem
        return False


def _marker_ok(marker: Mapping[str, Any]) -> bool:
    """A marker retention writes: who, when (a number) and why, beside the digest."""
    when = marker.get("at")
    timed = isinstance(when, int | float) and not isinstance(when, bool)
    return timed and isinstance(marker.get("by"), str) and isinstance(marker.get("reason"), str)


def verify_log(
    events: Iterable[Event],
    split: int,
    recorded: dict[str, tuple[int, str]],
    detail_split: int = NEVER_SPLIT,
) -> ChainCheck:
    check = ChainCheck(split, detail_split=detail_split)
    for e in events:
        if not check.feed(e):
            return check
    check.finish(recorded)
    return check


class MetaRepo:
    """The `meta` table, as this transaction sees it: a key read (or written) once is
    remembered for the rest of the transaction, so `get_many` can prefetch what it will need."""

    def __init__(self, conn: Connection) -> None:
        self._raw = Raw(conn)
        self._seen: dict[str, str | None] = {}
        self.settle: Callable[[], object] | None = None  # reads a write's start (engine._Start)

    def _settled(self) -> None:
        if self.settle is not None:
            self.settle()

    def get(self, key: str) -> str | None:
        self._settled()
        if key not in self._seen:
            self.get_many((key,))
        return self._seen[key]

    def get_many(self, keys: tuple[str, ...]) -> dict[str, str]:
        self._settled()
        rows = self._raw.all(_META_GET_MANY + in_list("k", len(keys)), in_params("k", keys))
        found = {str(k): str(v) for k, v in rows}
        self._seen.update({k: found.get(k) for k in keys})
        return found

    def remember(self, values: dict[str, str | None]) -> None:
        """Values read with another statement (the one that starts a PostgreSQL write)."""
        self._seen.update({k: None if v is None else str(v) for k, v in values.items()})

    def set(self, key: str, value: str) -> None:
        self._settled()
        if self._raw.run(_META_SET, {"k": key, "v": value}) == 0:
            self._raw.run(_META_ADD, {"k": key, "v": value})
        self._seen[key] = value


def _event_of(row: Sequence[Any]) -> Event:
    """An event from the columns of `_EVENT_COLUMNS`, in that order."""
    seq, project_id, kind, actor, subject, data, at, prev_hash, digest = row
    return Event(int(seq), project_id, kind, actor, subject, loads(data), at, prev_hash, digest)


def _head(row: Sequence[Any] | None) -> Head:
    return Head(int(row[0]), str(row[1]), float(row[2]), True) if row else EMPTY


def _first(row: Any) -> Any:
    assert row is not None
    return row[0]
