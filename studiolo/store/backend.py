"""The interface between `Store` and a storage back-end, and what both back-ends share.

`Store` (`engine.py`) holds what is the same everywhere: retries, gate widening, the
listeners, the located-project cache. A `Backend` runs one attempt of a transaction the way
its driver does best: `sqlite.py` (one writer per file, group commit, a deferred fsync) and
`postgres.py` (writer gates, a project's writes in groups, psycopg's pipeline mode). Neither
the repositories nor the door know which one they talk to, as httpx's client does not know
its transport.

Here too: the transaction a function runs on (`Tx`, the repositories over one connection and
the authority clock), a write's clock guard, and one write of a group in its savepoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine

from studiolo.store._raw import Bare
from studiolo.store.a2a import A2ARepo
from studiolo.store.access import AccessRepo
from studiolo.store.audit import AuditRepo, MetaRepo
from studiolo.store.authsignal import AuthSignal
from studiolo.store.content import ContentRepo
from studiolo.store.evidence import EvidenceRepo
from studiolo.store.gate import Gate
from studiolo.store.group import Job
from studiolo.store.publications import PublicationRepo
from studiolo.store.remote import RemoteRepo
from studiolo.store.retention import RetentionRepo
from studiolo.store.steps import Steps
from studiolo.store.work import WorkRepo

__all__ = [
    "Backend",
    "Reconnect",
    "Tx",
    "floats",
    "guarded_now",
    "report",
    "run_job",
    "service_read",
    "service_start",
]

T = TypeVar("T")
Clock = Callable[[], float]

_log = logging.getLogger("studiolo.store")
_READ_META = ("clock_last", "incarnation")
_WRITE_META = (*_READ_META, "service_key")


class Tx:
    """One transaction: the repositories over one connection, plus the authority clock.

    `now` is read once per transaction: at its start for a write and a batched read on
    PostgreSQL (it travels with the first read); else on first use (most reads never ask,
    and a round trip is saved). `incarnation` comes with it. `steps`: the composite reads.
    """

    def __init__(self, conn: Connection, gate: Gate, *, sequence: bool) -> None:
        self.conn = conn
        self.access = AccessRepo(conn)
        self.work = WorkRepo(conn)
        self.content = ContentRepo(conn)
        self.evidence = EvidenceRepo(conn)
        self.audit = AuditRepo(conn, gate, sequence=sequence)
        self.meta = MetaRepo(conn)
        self.a2a = A2ARepo(conn)
        self.remote = RemoteRepo(conn)
        self.publications = PublicationRepo(conn)
        self.retention = RetentionRepo(conn)
        self.steps = Steps(self)
        self._authority: Callable[[], tuple[float, str]] = lambda: (0.0, "")
        self._read: tuple[float, str] | None = None
        self.start: Any = None  # a PostgreSQL write's first statement, read lazily (`postgres._Start`)

    @property
    def now(self) -> float:
        """The authority clock at this transaction's commit point (SPEC §2)."""
        return self._clock()[0]

    @property
    def incarnation(self) -> str:
        return self._clock()[1]

    def _clock(self) -> tuple[float, str]:
        if self._read is None:
            self._read = self._authority()
        return self._read


class Backend(Protocol):
    """One storage back-end: how a transaction's attempt runs on it (`Store` retries)."""

    dialect: str
    engine: Engine
    auth_signal: AuthSignal | None

    def write_once(self, fn: Callable[[Tx], T], gate: Gate) -> T:
        """Run `fn` in one write transaction under `gate` (a serialization failure raises)."""
        ...

    def read_once(self, fn: Callable[[Tx], T], *, settled: bool, batched: bool) -> T:
        """Run `fn` on one consistent snapshot (see `Store.read`)."""
        ...

    def glance(self, read: Callable[[Bare], T]) -> T:
        """`read` on a driver connection outside any transaction (`Store.glance`)."""
        ...

    def read_ahead(self, read: Callable[[Bare], T]) -> T | None:
        """`glance(read)` where a read sent before the writer gate saves round trips; else None."""
        ...

    def batch_gate(self, gate_of: Callable[[], Gate]) -> Gate: ...

    def exclusive(self) -> AbstractContextManager[Connection]:
        """A connection in a write transaction that holds every lock writers take."""
        ...

    def migrating(self, conn: Connection) -> AbstractContextManager[None]:
        """`conn` in a transaction that excludes every writer and migration (`Store.upgrade`)."""
        ...

    def open(self, conn: Connection, *, write: bool, gate: Gate) -> Tx: ...

    def authority_clock(self, conn: Connection) -> float: ...

    def retryable(self, exc: BaseException) -> bool: ...

    def dispose(self) -> None: ...


class Reconnect(Exception):
    """A connection was found dead before the transaction's function ran: safe to retry."""


def service_start(tx: Tx, clock: Clock, *, every: bool) -> tuple[float, float | None, str, float | None]:
    """A write's (clock, guard, incarnation, floor) from the service clock. `every`: every
    write moves `meta.clock_last` (SQLite), so no floor is read."""
    found = tx.meta.get_many(_WRITE_META)  # a writer will most likely sign: the key comes too
    last = float(found["clock_last"]) if "clock_last" in found else None
    floor = tx.audit.latest_at() if tx.audit.gate.exclusive and not every else None
    return float(clock()), last, found.get("incarnation", ""), floor


def service_read(tx: Tx, clock: Clock) -> tuple[float, str]:
    """A read's clock from the service clock, at least `meta.clock_last`."""
    found = tx.meta.get_many(_READ_META)
    return max(clock(), float(found.get("clock_last") or 0.0)), found.get("incarnation", "")


def guarded_now(
    tx: Tx, start: tuple[float, float | None, str, float | None], *, every: bool
) -> tuple[float, str]:
    """A write's clock: the source, at least `meta.clock_last` and the last event time of
    each chain the write holds (of every chain, for a whole-ledger write: `floor`).
    Whole-ledger writes, and every write where `every`, move `meta.clock_last`; a chain's
    own guard moves with its events."""
    gate = tx.audit.gate
    source, last, incarnation, floor = start
    whole = gate.exclusive or every
    held = [] if whole else [tx.audit.head(c or None).at for c in gate.ordered()]
    now = max([source, *floats(last, floor, *held)])
    if whole and (last is None or now > last):
        tx.meta.set("clock_last", repr(now))
    return now, incarnation


def run_job(
    job: Job[Any],
    tx: Callable[[], Tx],
    writing: threading.local,
    send: Callable[[str], object],
    fatal: tuple[type[BaseException], ...] = (),
) -> None:
    """One write of a group, in its own savepoint (statements sent with `send`) on the
    transaction `tx()` opens: if it raises, it is rolled back to the savepoint and fails
    alone; a `fatal` error ends the group instead."""
    send("SAVEPOINT studiolo_op")
    writing.active = True
    try:
        job.result = job.run(tx())
    except fatal:
        raise
    except Exception as exc:  # this write fails alone: undo its effects, keep the group
        send("ROLLBACK TO studiolo_op")
        job.error = exc
    finally:
        writing.active = False
    send("RELEASE studiolo_op")


def floats(*values: float | str | None) -> list[float]:
    return [float(v) for v in values if v is not None]


def report(hook: Callable[..., None], *args: Any) -> None:
    """Tell a hook, never failing the write for it: an observer that raises (a closed log
    stream, say) must not turn a committed write into an error, nor a group into a failed one."""
    try:
        hook(*args)
    except Exception:  # the hook's own failure is the observer's to see, not the writer's
        _log.exception("a store hook failed")
