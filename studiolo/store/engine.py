"""The storage port: one `Store` that runs functions inside serializable transactions.

Every write appends to a hash-chained audit log: one chain per project and one for events of
no project (the ledger chain). Writes to one chain conflict (the chain's head is a total
order), so both back-ends run a chain's writers one at a time and make every transaction
read the state the previous one committed. Writes to different projects touch different
rows and may run at once (PostgreSQL).

`Store` holds what every back-end shares: bounded retries with full jitter (serialization
failures, a busy file, a connection found dead), a write rerun under a wider gate when it
appended beyond its own, the listeners told after a commit, the located-project cache. How a
transaction runs is its back-end's (`backend.Backend`): `sqlite.py` (WAL, `BEGIN IMMEDIATE`,
group commit, a deferred fsync) or `postgres.py` (writer gates, a project's writes in
groups, pipeline mode), chosen once from the URL. Nothing above the store asks which.

The authority clock is read once per transaction, after the gate: the database server's
clock on PostgreSQL, the injected service clock on SQLite. It never moves backwards within
an incarnation: it is at least `meta.clock_last` and the time of the last event of every
chain the write holds (`backend.guarded_now`).

SQL is written one way: plain text with `:name` placeholders, the same for both back-ends,
run through `_raw.Raw` on the driver's own connection (the hot path: SQLAlchemy's execution
machinery costs tens of microseconds a statement, more than SQLite's own work). Older reads
still built with SQLAlchemy Core run on the same connection and transaction.
"""

from __future__ import annotations

import functools
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from studiolo.core.model import Event
from studiolo.store import migrations
from studiolo.store._raw import Bare
from studiolo.store.access import auth_generation_of
from studiolo.store.authsignal import AuthSignal
from studiolo.store.backend import Backend, Reconnect, Tx, report
from studiolo.store.gate import Gate, GateTooNarrow
from studiolo.store.group import Volatile, volatile
from studiolo.store.hooks import StoreHooks
from studiolo.store.locate import locate_project
from studiolo.store.postgres import WRITER_GATE, PostgresBackend
from studiolo.store.sqlite import SQLiteBackend

__all__ = ["WRITER_GATE", "ClockSource", "Gate", "Store", "Tx"]

T = TypeVar("T")
Clock = Callable[[], float]
ClockSource = Literal["database", "service"]

_BACKOFF_BASE = 0.002
_BACKOFF_CAP = 0.25
_MAX_WIDENINGS = 3  # a write whose gate was too narrow this often takes the whole ledger


class Store:
    """The ledger's storage. `write(fn)` and `read(fn)` run `fn(tx)` in one transaction.

    `fn` may run more than once (a retried serialization failure), so it must not have
    side effects outside the transaction.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock = time.time,
        clock_source: ClockSource | None = None,
        max_retries: int = 8,
        pool_size: int = 10,
        max_overflow: int = 0,
        writer_gate: bool | None = None,
        fsync: Callable[[int], None] = os.fsync,
    ) -> None:
        if pool_size < 1 or max_overflow < 0:
            raise ValueError(f"pool_size {pool_size} (at least 1), max_overflow {max_overflow} (at least 0)")
        self.url = url
        self._max_retries = max_retries
        self.dialect = make_url(url).get_backend_name()
        self._writing = threading.local()  # a nested write would wait for itself: refuse it
        self.backend: Backend
        if self.dialect == "sqlite":
            if clock_source == "database":
                raise ValueError("SQLite has no server clock: use clock_source='service'")
            self.clock_source: ClockSource = "service"
            self.writer_gate = False
            self.backend = SQLiteBackend(
                url, clock=clock, writing=self._writing, observed=self._group_committed, fsync=fsync
            )
        else:
            # Tests that need a controllable clock on PostgreSQL pass clock_source="service".
            self.clock_source = clock_source or "database"
            self.writer_gate = (self.dialect == "postgresql") if writer_gate is None else writer_gate
            self.backend = PostgresBackend(
                url,
                clock=clock,
                database_clock=self.clock_source == "database",
                writing=self._writing,
                observed=self._group_committed,
                pool_size=pool_size,
                max_overflow=max_overflow,
                writer_gate=self.writer_gate,
            )
        self.engine: Engine = self.backend.engine
        self.auth_signal: AuthSignal | None = self.backend.auth_signal  # `authsignal.py`
        self._projects: dict[tuple[str, str], str] = {}  # located ids (they never move)
        self.retries = 0  # serialization failures retried (for metrics and tests)
        self.widenings = 0  # writes rerun under a wider gate
        self._on_publication: list[Callable[[str], None]] = []  # `on_publication`
        self.hooks = StoreHooks()  # what the store reports as it works (`studiolo.observe`)

    # schema ---------------------------------------------------------------------
    def upgrade(self, revision: str = "head") -> str:
        """Run the Alembic migrations (both back-ends share them); return the new revision."""
        with self.engine.connect() as conn, self.backend.migrating(conn):
            migrations.upgrade(conn, revision)
            return migrations.current(conn) or ""

    def schema_revision(self) -> str | None:
        with self.engine.connect() as conn:
            return migrations.current(conn)

    def dispose(self) -> None:
        self.backend.dispose()

    # transactions ---------------------------------------------------------------
    def write(self, fn: Callable[[Tx], T], gate: Gate | None = None) -> T:
        """Run `fn` in one serializable write transaction under `gate` (default: the whole
        ledger); retry on serialization failure, and under a wider gate if `fn` appends to a
        chain `gate` does not cover.

        `fn` marked `volatile(fn)` (SQLite): commit without an fsync of its own; a crash may
        lose it until the next durable commit. Only for writes whose loss is safe."""
        if getattr(self._writing, "active", False):
            raise RuntimeError("store.write inside store.write: one operation is one transaction")
        if not self._on_publication:
            return self._write_signalled(fn, gate)
        appended: set[str] = set()
        try:
            return self._write_signalled(_noting_publications(fn, appended), gate)
        finally:  # committed (or perhaps: a wake for nothing costs a projector one read)
            for project_id in sorted(appended):
                for listener in self._on_publication:
                    listener(project_id)

    def on_publication(self, listener: Callable[[str], None]) -> None:
        """Call `listener(project_id)` after each write that logged a change to the project's
        artifacts (its publication log) returns: the git projector wakes on it instead of
        polling. A listener runs on the writer's thread: it must only signal."""
        self._on_publication.append(listener)

    def _write_signalled(self, fn: Callable[[Tx], T], gate: Gate | None) -> T:
        appended: list[Event] = []
        fn = _noting_events(fn, appended)
        if self.auth_signal is None:
            result = self._write(fn, gate)
        else:
            self.auth_signal.ensure()  # before anything commits: a revocation must be able to signal
            revoked: list[bool] = []
            try:
                result = self._write(_noting_revocations(fn, revoked), gate)
            finally:
                if revoked:  # committed (or perhaps committed: a failed fsync): readers re-read
                    self.auth_signal.bump()
        if appended:
            report(self.hooks.committed, appended)
        return result

    def _write(self, fn: Callable[[Tx], T], gate: Gate | None) -> T:
        held = gate or Gate.whole_ledger()
        for _ in range(_MAX_WIDENINGS):
            try:
                return self._with_retry(functools.partial(self.backend.write_once, fn, held))
            except GateTooNarrow as narrow:
                self.widenings += 1
                held = narrow.gate
        return self._with_retry(lambda: self.backend.write_once(fn, Gate.whole_ledger()))

    def _group_committed(self, size: int, waited: float) -> None:
        report(self.hooks.group_committed, size, waited)

    def project_of(self, kind: str, ident: str) -> str | None:
        """The project a task, attempt or candidate belongs to (None: no such row), read
        outside any gate; a found answer is remembered (rows never change project)."""
        key = (kind, ident)
        found = self._projects.get(key)
        if found is None:
            found = self.glance(lambda driver: locate_project(driver, kind, ident))
            if found is not None:
                self.located(kind, ident, found)
        return found

    def located(self, kind: str, ident: str, project_id: str) -> None:
        """Remember the project of a row read elsewhere (what `project_of` would find)."""
        if len(self._projects) >= 100_000:
            self._projects.clear()
        self._projects[(kind, ident)] = project_id

    def auth_generation(self) -> tuple[str, str]:
        """`AccessRepo.auth_generation` (what an authentication cache entry is valid for), now,
        in one statement."""
        return self.glance(auth_generation_of)

    def read_ahead(self, read: Callable[[Bare], T]) -> T | None:
        """`read` as a `glance`, where a read sent before the writer gate saves
        round trips inside it (PostgreSQL); None where it cannot (SQLite: no round trips)."""
        return self.backend.read_ahead(read)

    def batch_gate(self, gate_of: Callable[[], Gate]) -> Gate:
        """The gate of writes that may share one transaction (heartbeats): SQLite has one
        writer whatever the gate, so the whole ledger; else `gate_of()`."""
        return self.backend.batch_gate(gate_of)

    def glance(self, read: Callable[[Bare], T]) -> T:
        """`read` on a pooled DB-API connection outside any transaction: for one
        statement, which is its own consistent snapshot, without the BEGIN and COMMIT (two
        round trips on PostgreSQL) and the machinery of `read`."""
        return self.backend.glance(read)

    def read(self, fn: Callable[[Tx], T], settled: bool = True, *, batched: bool = False) -> T:
        """Run `fn` on one consistent snapshot (no writes).

        `batched`: on PostgreSQL the read runs in psycopg's pipeline mode, so reads sent
        with `Raw.later` share one round trip and BEGIN travels with the first. Only for a
        read whose statements all run through `Raw` or SQLAlchemy's plain execution (no
        server-side cursor: `yield_per` and streaming are not for a pipeline).

        SQLite: the answer waits until what this process committed before it is durable (a
        durable group's fsync runs after its COMMIT: see `sqlite.py`), so a reader is never
        told what a power failure could take back. `settled=False` skips the wait, for a
        read whose answer no one is shown (authentication: acting on a revocation that is
        lost later is the safe direction, and a grant it relied on is older than anything
        the request writes)."""

        def once() -> T:
            try:
                return self.backend.read_once(fn, settled=settled, batched=batched)
            except DBAPIError as exc:
                if exc.connection_invalidated:  # a read has no effects: always safe to rerun
                    raise Reconnect(str(exc)) from exc
                raise

        return self._with_retry(once)

    def _with_retry(self, once: Callable[[], T]) -> T:
        """Bounded retry with full jitter: serialization failures, deadlocks, a busy SQLite
        file, and a connection found dead before `fn` ran. Anything else propagates."""
        for attempt in range(self._max_retries + 1):
            try:
                return once()
            except Exception as exc:
                retry = isinstance(exc, Reconnect) or self.backend.retryable(exc)
                if attempt >= self._max_retries or not retry:
                    raise
                self.retries += 1
                report(self.hooks.retried)
                time.sleep(random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt)))
        raise AssertionError("unreachable")

    @contextmanager
    def exclusive(self) -> Iterator[Connection]:
        """A connection inside one write transaction that holds every lock writers take.

        For whole-ledger operations (restore): no writer and no migration runs meanwhile.
        """
        try:
            with self.backend.exclusive() as conn:
                yield conn
        finally:
            if self.auth_signal is not None:  # a restore replaces every token and grant
                self.auth_signal.bump()

    def tx_on(self, conn: Connection, *, write: bool) -> Tx:
        """A `Tx` over a connection already inside a transaction (from `exclusive()`)."""
        return self.backend.open(conn, write=write, gate=Gate.whole_ledger())

    def authority_clock(self, conn: Connection) -> float:
        """The authority's clock right now, unguarded (a restore starts its guard afresh)."""
        return self.backend.authority_clock(conn)


def _noting_events(fn: Callable[[Tx], T], appended: list[Event]) -> Callable[[Tx], T]:
    """`fn`, leaving in `appended` the events its last run appended (volatile if `fn` is)."""

    def run(tx: Tx) -> T:
        result = fn(tx)
        appended[:] = tx.audit.appended
        return result

    return volatile(run) if isinstance(fn, Volatile) else run


def _noting_revocations(fn: Callable[[Tx], T], revoked: list[bool]) -> Callable[[Tx], T]:
    """`fn`, noting in `revoked` whether it moved the auth generation (volatile if `fn` is)."""

    def run(tx: Tx) -> T:
        try:
            return fn(tx)
        finally:
            if tx.access.auth_changed:
                revoked.append(True)

    return volatile(run) if isinstance(fn, Volatile) else run


def _noting_publications(fn: Callable[[Tx], T], appended: set[str]) -> Callable[[Tx], T]:
    """`fn`, noting in `appended` the projects whose publication log it appended to."""

    def run(tx: Tx) -> T:
        out = fn(tx)
        appended.update(tx.publications.appended)
        return out

    return volatile(run) if isinstance(fn, Volatile) else run


def _within(gate: Gate, fn: Callable[[Tx], T]) -> Callable[[Tx], T]:
    """`fn` on a transaction that may append only to `gate`'s chains (volatile if `fn` is)."""

    def run(tx: Tx) -> T:
        tx.audit.gate = gate
        return fn(tx)

    return volatile(run) if isinstance(fn, Volatile) else run
