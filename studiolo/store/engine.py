"""The storage port: one `Store` that runs functions inside serializable transactions.

Every write appends to a hash-chained audit log: one chain per project and one for events of
no project (the ledger chain). Writes to one chain conflict (the chain's head is a total
order), so both back-ends run a chain's writers one at a time and make every transaction
read the state the previous one committed. Writes to different projects touch different
rows and may run at once (PostgreSQL).

SQLite: WAL, `BEGIN IMMEDIATE` for every write (one writer at a time, across processes, for
the whole file). A process's concurrent writes commit in groups, each write in its own
savepoint of one transaction with one fsync (`group.py`). A group first takes a blocking
`flock` on `<ledger>.writer-lock` (the *writer lock*): several server processes (`serve
--workers N`) queue in the kernel instead of busy-waiting in SQLite's busy handler, which
sleeps up to 100 ms between tries. A write may be marked not durable (a lease extension): it
commits with `synchronous=NORMAL`, no fsync of its own; the next durable commit's fsync of
the WAL carries it, and losing it only shortens a lease (`store.write(volatile(fn))`).

The fsync of a durable group happens outside the locks. Its COMMIT runs with
`synchronous=NORMAL`: the WAL frames are written (`write()`, into the page cache) and made
visible, no fsync, so the writer lock is held for CPU and `write()` only. After releasing
both locks (the next group may lead) the group fsyncs `<ledger>-wal` and only then answers
its durable callers. Why this is as durable as `synchronous=FULL`: in WAL mode FULL differs
from NORMAL only by an fsync of the WAL at the end of each commit (sqlite.org, PRAGMA
synchronous and "Write-Ahead Logging": with NORMAL "the WAL file is synchronized before each
checkpoint and the database file is synchronized after each completed checkpoint and the WAL
file header is synchronized when a WAL file begins to be reused after a checkpoint"; a
transaction is lost in a power failure only if its frames were never synced). Our fsync is
that fsync, begun after the COMMIT returned, on the same file (fsync flushes a file, not a
descriptor). What can happen to the frames in between: later commits append after them (the
fsync covers them too); a checkpoint, in this connection (autocheckpoint) or another
process, first syncs the WAL, then copies it into the ledger file; the WAL is reused from its
start only after a checkpoint copied every frame and synced the ledger file; SQLite deletes
it only after such a checkpoint (the last connection closing). So when the fsync returns
(or the file is gone), every frame of the group is on disk, in the WAL or the ledger file.
A write that depends on the group commits after it, in the same WAL, so its own fsync covers
the group as well: nothing acknowledged depends on something lost. A reader could see a
durable group's writes during its fsync; `read` therefore waits, before it answers, until
every group this process had begun is durable (`GroupCommit.barrier`), so no reader is told
what a power failure could take back — within one process; with `serve --workers N` a read
may see another process's group during its fsync. A failed fsync fails the group's durable
callers with the error although the writes were applied.
Kill -9 of the process loses nothing either way: written frames are in the kernel's cache.

The ledger holds the service signing key, so a new SQLite file is created
0600 (SQLite gives its -wal and -shm files the database file's mode) and a missing directory
for it 0700.

PostgreSQL: the *writer gates* (`studiolo.store.gate`). A write names its chains before it
starts. It takes a process-local lock per chain and then, outside any transaction, the
session advisory lock `WRITER_GATE` in shared mode and one advisory lock per chain, *before*
`BEGIN ISOLATION LEVEL REPEATABLE READ`, so its snapshot is taken after the chain's previous
writer committed; it releases them after `COMMIT`. This is PostgreSQL's `BEGIN IMMEDIATE`,
per project. A write that may change what several projects read takes `WRITER_GATE`
exclusively instead, and runs SERIALIZABLE: it waits for every writer in flight and holds
new ones back, so it is ordered before or after every other write. Without the gates
(`writer_gate=False`: another tool, a back-end without advisory locks such as CockroachDB)
every write runs SERIALIZABLE and the database serializes them; serialization failures
(40001, 40P01) are retried a bounded number of times with full jitter. Readers run
REPEATABLE READ, READ ONLY: one consistent snapshot, no gate.

A project's writes in one process commit in groups (PostgreSQL under the gates): those that
queue while one holds the project's local lock go together in the next transaction, each in
its own savepoint, in queue order (`_commit_chain_group`, the queue of `group.py`). A write
that raises fails alone; a database error, which cannot be pinned on one write, makes every
write of the group run again in a transaction of its own.

The authority clock is read once per transaction, after the gate: the database server's
clock on PostgreSQL (`clock_timestamp()`), the injected service clock on SQLite. It never
moves backwards within an incarnation: it is at least `meta.clock_last` (moved by
whole-ledger writes, and by every write on SQLite) and the time of the last event of every
chain the write holds.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any, Literal, TypeVar

import psycopg
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from studiolo.core.model import Event
from studiolo.store import migrations
from studiolo.store._raw import PIPELINE, Raw, flush_held
from studiolo.store.a2a import A2ARepo
from studiolo.store.access import AccessRepo, auth_generation_of
from studiolo.store.audit import EMPTY, AuditRepo, Head, MetaRepo
from studiolo.store.authsignal import AuthSignal
from studiolo.store.content import ContentRepo
from studiolo.store.evidence import EvidenceRepo
from studiolo.store.gate import Gate, GateTooNarrow, chain_key
from studiolo.store.group import GroupCommit, Job, Settle, Volatile, volatile
from studiolo.store.hooks import StoreHooks
from studiolo.store.locate import locate_project
from studiolo.store.publications import PublicationRepo
from studiolo.store.remote import RemoteRepo
from studiolo.store.retention import RetentionRepo
from studiolo.store.work import WorkRepo

__all__ = ["WRITER_GATE", "ClockSource", "Gate", "Store", "Tx"]

T = TypeVar("T")
Clock = Callable[[], float]
ClockSource = Literal["database", "service"]

WRITER_GATE = 0x5354_4C4F_0001  # pg_advisory_lock key of the writer gate ("STLO" 1)
MIGRATION_LOCK = 0x5354_4C4F_0002  # held while migrating or restoring

_SQLITE_POOL = 48
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
_BACKOFF_BASE = 0.002
_BACKOFF_CAP = 0.25

_MAX_WIDENINGS = 3  # a write whose gate was too narrow this often takes the whole ledger
_log = logging.getLogger("studiolo.store")
_PG_MAX_GROUP = 16  # writes of one project committed together, at most

# The first statement of a write, one round trip: the server clock, the clock guard, the
# incarnation, the seq of the first event, and the head of the write's chain.
_PG_START_CHAIN = """
SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) AS now,
       (SELECT value FROM meta WHERE key = 'clock_last') AS last,
       (SELECT value FROM meta WHERE key = 'incarnation') AS incarnation,
       (SELECT value FROM meta WHERE key = 'service_key') AS service_key,
       nextval('events_seq') AS seq, h.seq AS head_seq, h.hash AS head_hash, h.at AS head_at
  FROM (SELECT 1) AS one LEFT JOIN chains AS h ON h.chain = :chain
"""
_PG_START_LEDGER = """
SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) AS now,
       (SELECT value FROM meta WHERE key = 'clock_last') AS last,
       (SELECT value FROM meta WHERE key = 'incarnation') AS incarnation,
       (SELECT value FROM meta WHERE key = 'service_key') AS service_key,
       nextval('events_seq') AS seq, (SELECT max(at) FROM chains) AS head_at
"""
_BEGIN = {level: f"BEGIN ISOLATION LEVEL {level}".encode() for level in ("REPEATABLE READ", "SERIALIZABLE")}
_BEGIN_READ = b"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_READ_META = ("clock_last", "incarnation")
_WRITE_META = (*_READ_META, "service_key")
_PG_NOW = "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)"
_PG_CLOCK_READ = """
SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) AS now,
       (SELECT value FROM meta WHERE key = 'clock_last') AS last,
       (SELECT value FROM meta WHERE key = 'incarnation') AS incarnation,
       (SELECT max(at) FROM chains) AS head_at
"""


class Tx:
    """One transaction: the repositories over one connection, plus the authority clock.

    `now` is read once per transaction: at its start for a write; for a read, on first use
    (most reads never ask, and a round trip is saved). `incarnation` comes with it.
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
        self._authority: Callable[[], tuple[float, str]] = lambda: (0.0, "")
        self._expect: Callable[[], None] | None = None  # sends the clock's read ahead (`expect_clock`)
        self._read: tuple[float, str] | None = None
        self.start: _Start | None = None  # a PostgreSQL write's first statement, read lazily

    @property
    def now(self) -> float:
        """The authority clock at this transaction's commit point (SPEC §2)."""
        return self._clock()[0]

    @property
    def incarnation(self) -> str:
        return self._clock()[1]

    def together(self) -> AbstractContextManager[None]:
        """Writes sent inside travel as one statement on PostgreSQL (`Raw.together`)."""
        return Raw(self.conn).together()

    def expect_clock(self) -> None:
        """The transaction will ask for `now`: in a batched PostgreSQL read, send the clock's
        read now, to travel with the reads already sent (else it is read when first asked)."""
        expect, self._expect = self._expect, None
        if expect is not None and self._read is None:
            expect()

    def _clock(self) -> tuple[float, str]:
        if self._read is None:
            self._read = self._authority()
        return self._read


class Store:
    """The ledger's storage. `write(fn)` and `read(fn)` run `fn(tx)` in one transaction.

    `fn` may run more than once (a retried serialization failure), so it must not have
    side effects outside the transaction.
    """

    auth_signal: AuthSignal | None = None  # SQLite on a file: see `authsignal.py`

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
        self._clock = clock
        self._max_retries = max_retries
        self.dialect = make_url(url).get_backend_name()
        self.is_sqlite = self.dialect == "sqlite"
        # Tests that need a controllable clock on PostgreSQL pass clock_source="service".
        self.clock_source: ClockSource = clock_source or ("service" if self.is_sqlite else "database")
        if self.is_sqlite and self.clock_source == "database":
            raise ValueError("SQLite has no server clock: use clock_source='service'")
        self.writer_gate = (self.dialect == "postgresql") if writer_gate is None else writer_gate
        self.engine: Engine = _make_engine(url, self.dialect, pool_size, max_overflow)
        # SQLite on a file: the group commit always writes on one connection of its own.
        # SQLite empties a connection's page cache when another connection wrote, and each
        # connection keeps its own prepared statements: a pooled connection, taken in turn,
        # would start most groups cold.
        self._writes: Engine = self.engine
        if self.is_sqlite and _beside(url, "") is not None:
            self._writes = _make_engine(url, self.dialect, 1, 0, only=True)
            # It only ever commits groups, each made durable by `_sync_wal` when it must be:
            # NORMAL for good, rather than switched to and fro around every group.
            event.listen(self._writes, "connect", _sqlite_normal_sync)
        self._local_writer = threading.Lock()  # whole-ledger writers (every writer on SQLite)
        self._chain_locks: dict[str, threading.Lock] = {}  # one writer per chain per process
        self._chain_locks_guard = threading.Lock()
        self._chain_groups: dict[str, GroupCommit] = {}  # PostgreSQL: a project's writes commit in groups
        self._lock_path = _beside(url, ".writer-lock") if self.is_sqlite else None
        self._lock_fd: int | None = None
        self._wal_path = _beside(url, "-wal") if self.is_sqlite else None
        ledger_file = _beside(url, "") if self.is_sqlite else None
        # bumped after every write that ends a token's or grant's power (`authsignal.py`);
        # beside the real file, as SQLite puts its -wal and -shm, whatever path reached it
        if ledger_file:
            self.auth_signal = AuthSignal(os.path.realpath(ledger_file) + ".auth-signal")
        self._fsync = fsync  # the WAL's fsync after a durable group (tests make it slow)
        self._group = GroupCommit(self._commit_group, self._local_writer)  # SQLite writes
        self._group.observed = self._group_committed
        self._writing = threading.local()  # a nested write would wait for itself: refuse it
        self._projects: dict[tuple[str, str], str] = {}  # located ids (they never move)
        self.retries = 0  # serialization failures retried (for metrics and tests)
        self.hooks = StoreHooks()  # what the store reports as it works (`studiolo.observe`)
        self.widenings = 0  # writes rerun under a wider gate
        self.regrouped = 0  # PostgreSQL groups run again write by write after a database error
        self._on_publication: list[Callable[[str], None]] = []  # `on_publication`

    # schema ---------------------------------------------------------------------
    def upgrade(self, revision: str = "head") -> str:
        """Run the Alembic migrations (both back-ends share them); return the new revision."""
        with self.engine.connect() as conn, self._exclusive(conn):
            migrations.upgrade(conn, revision)
            return migrations.current(conn) or ""

    def schema_revision(self) -> str | None:
        with self.engine.connect() as conn:
            return migrations.current(conn)

    def dispose(self) -> None:
        self.engine.dispose()
        if self._writes is not self.engine:
            self._writes.dispose()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

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
            _report(self.hooks.committed, appended)
        return result

    def _write(self, fn: Callable[[Tx], T], gate: Gate | None) -> T:
        held = gate or Gate.whole_ledger()
        for _ in range(_MAX_WIDENINGS):
            try:
                return self._with_retry(functools.partial(self._write_once, fn, held))
            except GateTooNarrow as narrow:
                self.widenings += 1
                held = narrow.gate
        return self._with_retry(lambda: self._write_once(fn, Gate.whole_ledger()))

    def _write_once(self, fn: Callable[[Tx], T], gate: Gate) -> T:
        if self.is_sqlite:  # one writer for the whole file: the gate only bounds the chains
            return self._group.submit(_within(gate, fn))
        grouped = self._chain_group(gate)
        if grouped is not None:
            return grouped.submit(fn)
        with self._local(gate):
            return self._pg_alone(fn, gate)

    def _pg_alone(self, fn: Callable[[Tx], T], gate: Gate) -> T:
        """One write in a transaction of its own (the caller holds the gate's local locks)."""
        with self._transaction(write=True, gate=gate) as tx:
            self._writing.active = True
            try:
                return fn(tx)
            finally:
                self._writing.active = False

    def _chain_group(self, gate: Gate) -> GroupCommit | None:
        """PostgreSQL under the writer gates: the group commit of a one-chain gate (a
        project's writes), whose leader lock is the chain's local lock; else None."""
        if not self.writer_gate or gate.exclusive or gate.chains is None or len(gate.chains) != 1:
            return None
        (chain,) = gate.chains
        group = self._chain_groups.get(chain)
        if group is None:
            with self._chain_locks_guard:
                lock = self._chain_locks.setdefault(chain, threading.Lock())
                commit = functools.partial(self._commit_chain_group, gate)
                group = self._chain_groups.setdefault(chain, GroupCommit(commit, lock, _PG_MAX_GROUP))
                group.observed = self._group_committed
        return group

    def _commit_chain_group(self, gate: Gate, jobs: list[Job[Any]]) -> None:
        """PostgreSQL: a project's queued writes in one transaction under its gate, each in
        its own savepoint, in queue order (`group.py`): the gate, BEGIN and COMMIT are paid
        once. A write that raises is rolled back to its savepoint and fails alone. A
        database error, which cannot be told apart from the others' (a failed statement
        aborts the transaction and everything sent after it), fails no one: the writes are
        run again, each in a transaction of its own. A session lost after COMMIT was sent
        fails them all, as it fails a write alone: it may have committed."""
        if len(jobs) > 1:
            try:
                self._pg_group(gate, jobs)
                return None
            except _InDoubt as exc:  # perhaps committed: running them again could apply twice
                for job in jobs:
                    job.result, job.error = None, exc
                return None
            except _DATABASE_ERRORS:  # rolled back (or never sent)
                self.regrouped += 1
        for job in jobs:
            job.result, job.error = None, None
            try:
                job.result = job.context.run(self._pg_alone, job.fn, gate)
            except Exception as exc:
                job.error = exc
        return None

    def _pg_group(self, gate: Gate, jobs: list[Job[Any]]) -> None:
        with self.engine.connect() as conn, self._pg_write(conn, gate):
            raw = Raw(conn)  # the savepoints travel with the writes' own statements
            for job in jobs:
                # a database error perhaps aborted the transaction: it ends the group
                self._run_job(conn, job, gate, lambda sql: raw.send(sql, {}), _DATABASE_ERRORS)

    def _group_committed(self, size: int, waited: float) -> None:
        _report(self.hooks.group_committed, size, waited)

    def _commit_group(self, jobs: list[Job[Any]]) -> Settle | None:
        """SQLite: run queued writes, each in its savepoint, in one transaction (`group.py`).

        The COMMIT runs with `synchronous=NORMAL` (no fsync) on a file ledger; a durable
        group returns the fsync of the WAL, which the group commit runs after releasing the
        locks and before answering its callers. A ledger with no WAL path (in memory) keeps
        `synchronous=FULL` for a durable group."""
        deferred = self._wal_path is not None  # then `_writes` is the writing connection, NORMAL
        durable = any(job.durable for job in jobs)
        light = not deferred and not durable
        with self._writer_lock(), self._writes.connect() as conn:
            if light:
                conn.exec_driver_sql("PRAGMA synchronous=NORMAL")
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                try:
                    # The savepoint's statements go to the driver: SQLAlchemy's execution
                    # machinery costs more than SQLite's work here (two statements every write).
                    driver: Any = conn.connection.dbapi_connection
                    for job in jobs:
                        self._run_job(conn, job, Gate.whole_ledger(), driver.execute)
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
            finally:
                if light:
                    conn.exec_driver_sql("PRAGMA synchronous=FULL")
        return self._sync_wal if durable and deferred else None

    def _sync_wal(self) -> None:
        """fsync `<ledger>-wal` (after the group's COMMIT returned and the locks were let go).

        Opened afresh each time, never kept: SQLite may delete the WAL and create a new one,
        and a kept descriptor would sync the old file. A WAL that is not there (or is a new
        file) means the one the group wrote to was checkpointed, which syncs it and the
        ledger file, and then removed: the group is already durable."""
        assert self._wal_path is not None
        try:
            fd = os.open(self._wal_path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            self._fsync(fd)
        finally:
            os.close(fd)

    def _run_job(
        self,
        conn: Connection,
        job: Job[Any],
        gate: Gate,
        send: Callable[[str], object],
        fatal: tuple[type[BaseException], ...] = (),
    ) -> None:
        """One write of a group, in its own savepoint (statements sent with `send`): if it
        raises, it is rolled back to the savepoint and fails alone; a `fatal` error ends
        the group instead."""
        send("SAVEPOINT studiolo_op")
        self._writing.active = True
        try:
            job.result = job.run(self._open(conn, write=True, gate=gate))
        except fatal:
            raise
        except Exception as exc:  # this write fails alone: undo its effects, keep the group
            send("ROLLBACK TO studiolo_op")
            job.error = exc
        finally:
            self._writing.active = False
        send("RELEASE studiolo_op")

    def project_of(self, kind: str, ident: str) -> str | None:
        """The project a task, attempt or candidate belongs to (None: no such row), read
        outside any gate; a found answer is remembered (rows never change project)."""
        key = (kind, ident)
        found = self._projects.get(key)
        if found is None:
            found = self.glance(lambda driver: locate_project(driver, self.is_sqlite, kind, ident))
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

    def read_ahead(self, read: Callable[[Any, bool], T]) -> T | None:
        """`read(driver, pg)` as a `glance`, where a read sent before the writer gate saves
        round trips inside it (PostgreSQL); None where it cannot (SQLite: no round trips)."""
        if self.is_sqlite:
            return None
        return self.glance(lambda driver: read(driver, True))

    def batch_gate(self, gate_of: Callable[[], Gate]) -> Gate:
        """The gate of writes that may share one transaction (heartbeats): SQLite has one
        writer whatever the gate, so the whole ledger; else `gate_of()`."""
        return Gate.whole_ledger() if self.is_sqlite else gate_of()

    def glance(self, read: Callable[[Any], T]) -> T:
        """`read(driver)` on a pooled DB-API connection outside any transaction: for one
        statement, which is its own consistent snapshot, without the BEGIN and COMMIT (two
        round trips on PostgreSQL) and the machinery of `read`. SQLite's driver connections
        autocommit; a psycopg connection is switched for the read."""
        pooled = self.engine.raw_connection()
        try:
            driver: Any = pooled.dbapi_connection
            if self.is_sqlite:
                return read(driver)
            driver.autocommit = True
            try:
                return read(driver)
            finally:
                driver.autocommit = False
        finally:
            pooled.close()

    def read(self, fn: Callable[[Tx], T], settled: bool = True, *, batched: bool = False) -> T:
        """Run `fn` on one consistent snapshot (no writes).

        `batched`: on PostgreSQL the read runs in psycopg's pipeline mode (`_pg_read`), so
        reads sent with `Raw.later` share one round trip and BEGIN travels with the first.
        Only for a read whose statements all run through `Raw` or SQLAlchemy's plain
        execution (no server-side cursor: `yield_per` and streaming are not for a pipeline).

        SQLite: the answer waits until what this process committed before it is durable (a
        durable group's fsync runs after its COMMIT: see the module docstring), so a reader
        is never told what a power failure could take back. `settled=False` skips the wait,
        for a read whose answer no one is shown (authentication: acting on a revocation
        that is lost later is the safe direction, and a grant it relied on is older than
        anything the request writes)."""

        def once() -> T:
            try:
                with self._transaction(write=False, batched=batched) as tx:
                    found = fn(tx)
                if settled and self.is_sqlite and not getattr(self._writing, "active", False):
                    self._group.barrier()
                return found
            except DBAPIError as exc:
                if exc.connection_invalidated:  # a read has no effects: always safe to rerun
                    raise _Reconnect(str(exc)) from exc
                raise

        return self._with_retry(once)

    def _with_retry(self, once: Callable[[], T]) -> T:
        """Bounded retry with full jitter: serialization failures, deadlocks, a busy SQLite
        file, and a connection found dead before `fn` ran. Anything else propagates."""
        for attempt in range(self._max_retries + 1):
            try:
                return once()
            except (DBAPIError, _Reconnect, psycopg.Error, sqlite3.Error) as exc:
                if attempt >= self._max_retries or not self._retryable(exc):
                    raise
                self.retries += 1
                _report(self.hooks.retried)
                time.sleep(random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt)))
        raise AssertionError("unreachable")

    @contextmanager
    def exclusive(self) -> Iterator[Connection]:
        """A connection inside one write transaction that holds every lock writers take.

        For whole-ledger operations (restore): no writer and no migration runs meanwhile.
        """
        try:
            with (
                self._local_writer,
                self._writer_lock(),
                self.engine.connect() as conn,
                self._exclusive(conn),
            ):
                yield conn
        finally:
            if self.auth_signal is not None:  # a restore replaces every token and grant
                self.auth_signal.bump()

    def tx_on(self, conn: Connection, *, write: bool) -> Tx:
        """A `Tx` over a connection already inside a transaction (from `exclusive()`)."""
        return self._open(conn, write=write, gate=Gate.whole_ledger())

    @contextmanager
    def _exclusive(self, conn: Connection) -> Iterator[None]:
        if self.is_sqlite:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
            return
        whole = Gate.whole_ledger()
        with self._session_locks(conn, [(False, MIGRATION_LOCK)]), self._gated(conn, whole), conn.begin():
            yield

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        """SQLite: the cross-process writer lock (a blocking flock; the caller holds
        `_local_writer`, so one thread per process waits here). Other back-ends: nothing."""
        if self._lock_path is None:
            yield
            return
        if self._lock_fd is None:
            self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextmanager
    def _local(self, gate: Gate) -> Iterator[None]:
        """The process-local side of the gate: one thread per chain waits on PostgreSQL."""
        if self.is_sqlite or gate.exclusive:
            with self._local_writer:
                yield
            return
        with self._chain_locks_guard:
            locks = [self._chain_locks.setdefault(c, threading.Lock()) for c in gate.ordered()]
        with ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            yield

    @contextmanager
    def _transaction(self, *, write: bool, gate: Gate | None = None, batched: bool = False) -> Iterator[Tx]:
        gate = gate or Gate.whole_ledger()
        with self.engine.connect() as conn:
            if self.is_sqlite:
                conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
                yield from self._run(conn, write=write, gate=gate)
                return
            if write:
                with self._pg_write(conn, gate):
                    yield self._open(conn, write=True, gate=gate)
                return
            if batched:
                with self._pg_read(conn):
                    yield self._open(conn, write=False, gate=gate)
                return
            conn = conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            conn.begin()
            yield from self._run(conn, write=False, gate=gate)

    def _write_isolation(self, gate: Gate) -> str:
        """SERIALIZABLE, except for a project's write under its gate: REPEATABLE READ.

        Under the gates every write of a project sees all of its project's earlier writes,
        writes of two projects touch disjoint rows, and a write that changes what several
        projects read holds the whole ledger; so snapshot isolation is already serializable
        there. SERIALIZABLE on top would add only false conflicts between projects (its
        predicate locks cover whole index pages that small tables share), each one an
        aborted and retried write. Without the gates (`writer_gate=False`) every write is
        SERIALIZABLE."""
        if self.writer_gate and not gate.exclusive:
            return "REPEATABLE READ"
        return "SERIALIZABLE"

    def _run(self, conn: Connection, *, write: bool, gate: Gate) -> Iterator[Tx]:
        """Open the `Tx`, let the caller run, commit; on any error roll back."""
        try:
            try:
                tx = self._open(conn, write=write, gate=gate)
            except DBAPIError as exc:
                if exc.connection_invalidated:  # a pooled connection that died: nothing ran
                    raise _Reconnect(str(exc)) from exc
                raise
            yield tx
            conn.commit()
        except BaseException:
            conn.rollback()
            raise

    @contextmanager
    def _pg_write(self, conn: Connection, gate: Gate) -> Iterator[None]:
        """A PostgreSQL write in psycopg's pipeline mode, in as few round trips as its reads
        allow. The driver is in autocommit for it, so psycopg sends no BEGIN (and no Sync
        after it) of its own; the write sends, without waiting for any answer:

        - the gate's session locks (`_gate_locks`), one statement ended by a Sync (its own
          implicit transaction), then `BEGIN ISOLATION LEVEL ...` and the statement that reads
          the clock and chain head (`_Start`); the server runs them in order, so the snapshot
          is taken after the locks are granted. They travel with the function's first read.
        - the function's statements: a read that needs its answer waits for it (reads sent
          with `Raw.later` share one round trip), a write without one travels with the next.
        - at the end a Sync, COMMIT, a Sync and the locks' release, and the Sync of leaving
          pipeline mode: one round trip. A statement that failed (a write whose answer nobody
          waited for) makes the server skip what follows it up to the next Sync; COMMIT then
          ends the failed transaction as a rollback, and psycopg raises the statement's error.
          If the function raised, ROLLBACK replaces COMMIT. The release follows a Sync, so it
          runs whatever became of the transaction.

        A connection that breaks before COMMIT was sent is a safe retry (`_Reconnect`). One
        whose locks' release did not answer, or that is still in a transaction, is
        invalidated (ending the session frees its locks)."""
        raw: Any = conn.connection.dbapi_connection
        locks = self._gate_locks(gate)
        unlock = (_lock_sql(locks, take=False), [k for _, k in reversed(locks)]) if locks else None
        release: Any = None  # the cursor of the locks' release
        commit: Any = None  # the cursor of COMMIT: once it exists, a lost session is no safe retry
        raw.autocommit = True
        try:
            with raw.pipeline() as pipeline:  # leaving it sends a Sync and reads every answer
                conn.connection.info[PIPELINE] = pipeline
                try:
                    if locks:
                        raw.execute(_lock_sql(locks, take=True), [k for _, k in locks], prepare=False)
                        _end_segment(pipeline)
                    raw.execute(_BEGIN[self._write_isolation(gate)], prepare=False)
                    yield  # the caller opens its `Tx` (or one per write of a group) and runs
                    commit = raw.cursor()
                    _after_sync(pipeline, commit, b"COMMIT")  # a failed write skips here: COMMIT rolls back
                except BaseException:  # the write's own error propagates, not a cleanup's
                    _quietly(lambda: _after_sync(pipeline, raw.cursor(), b"ROLLBACK"))
                    if unlock is not None:
                        release = raw.cursor()
                        _quietly(lambda: _after_sync(pipeline, release, *unlock))
                    raise
                finally:
                    conn.connection.info.pop(PIPELINE, None)
                if unlock is not None:  # after a Sync: it runs whatever became of the transaction
                    release = raw.cursor()
                    _after_sync(pipeline, release, *unlock)  # an error here is the write's: it is queued
        except BaseException as exc:
            if raw.broken and commit is None:  # the session died before COMMIT: run it again
                raise _Reconnect(str(exc)) from exc
            if raw.broken and isinstance(exc, Exception):  # after COMMIT was sent: who knows
                raise _InDoubt(str(exc)) from exc
            raise
        finally:
            idle = not raw.broken and raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            if idle and (unlock is None or _answered(release)):
                raw.autocommit = False
            else:  # a lock perhaps still held, or a transaction still open: end the session
                conn.invalidate()
        if commit.statusmessage != "COMMIT":  # psycopg raised the error that aborted it, or:
            raise psycopg.errors.InFailedSqlTransaction("the write was rolled back, not committed")
        if not conn.invalidated:
            conn.commit()  # SQLAlchemy's bookkeeping: the driver's transaction already ended

    @contextmanager
    def _pg_read(self, conn: Connection) -> Iterator[None]:
        """A PostgreSQL read in psycopg's pipeline mode (`read(batched=True)`). The driver is
        in autocommit for it and the read sends its own `BEGIN ... READ ONLY`, which travels
        with the first statement; reads sent with `Raw.later` share a round trip; a Sync and
        COMMIT end it in one more. A session that broke is retried (`_Reconnect`: a read has
        no effects); one left in a transaction is invalidated."""
        raw: Any = conn.connection.dbapi_connection
        raw.autocommit = True
        try:
            with raw.pipeline() as pipeline:  # leaving it sends a Sync and reads every answer
                conn.connection.info[PIPELINE] = pipeline
                try:
                    raw.execute(_BEGIN_READ, prepare=False)
                    yield
                    _after_sync(pipeline, raw.cursor(), b"COMMIT")
                except BaseException:  # the read's own error propagates, not a cleanup's
                    _quietly(lambda: _after_sync(pipeline, raw.cursor(), b"ROLLBACK"))
                    raise
                finally:
                    conn.connection.info.pop(PIPELINE, None)
        except BaseException as exc:
            if raw.broken and isinstance(exc, Exception):
                raise _Reconnect(str(exc)) from exc
            raise
        finally:
            if not raw.broken and raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                raw.autocommit = False
            else:
                conn.invalidate()
        if not conn.invalidated:
            conn.commit()  # SQLAlchemy's bookkeeping: the driver's transaction already ended

    def _gate_locks(self, gate: Gate) -> list[tuple[bool, int]]:
        """The session advisory locks of `gate`, (shared, key) in the order they are taken."""
        if not self.writer_gate:
            return []
        if gate.exclusive:
            return [(False, WRITER_GATE)]
        return [(True, WRITER_GATE), *((False, chain_key(c)) for c in gate.ordered())]

    @contextmanager
    def _gated(self, conn: Connection, gate: Gate) -> Iterator[None]:
        locks = self._gate_locks(gate)
        if not locks:
            yield
            return
        with self._session_locks(conn, locks):
            yield

    @contextmanager
    def _session_locks(self, conn: Connection, locks: list[tuple[bool, int]]) -> Iterator[None]:
        """PostgreSQL session advisory locks, (shared, key) in the order given, taken in one
        statement outside any transaction (so the next snapshot is taken after they are
        granted) and released after the commit. A connection that cannot release them is
        invalidated: closing the session releases the locks."""
        raw: Any = conn.connection.dbapi_connection
        try:
            _autocommit_execute(raw, _lock_sql(locks, take=True), [k for _, k in locks])
        except psycopg.OperationalError as exc:
            conn.invalidate()
            raise _Reconnect(str(exc)) from exc
        try:
            yield
        finally:
            try:
                if conn.in_transaction():
                    conn.rollback()
                _autocommit_execute(raw, _lock_sql(locks, take=False), [k for _, k in reversed(locks)])
            except Exception:
                conn.invalidate()
                raise

    def _open(self, conn: Connection, *, write: bool, gate: Gate) -> Tx:
        tx = Tx(conn, gate, sequence=self.dialect == "postgresql")
        if not write:
            tx._authority = lambda: self._read_now(tx)
            if self.clock_source == "database" and PIPELINE in conn.connection.info:
                tx._expect = lambda: self._expect_clock(tx)
            return tx
        tx._authority = lambda: self._write_now(tx)
        if self.clock_source == "database":
            # Sent first thing, right after the gate; its answer is read when first needed
            # (it comes back with the write's first read).
            tx.start = _Start(tx)
        else:
            _ = tx.now  # a writer reads the clock first thing
        return tx

    def authority_clock(self, conn: Connection) -> float:
        """The authority's clock right now, unguarded (a restore starts its guard afresh)."""
        if self.clock_source == "service":
            return float(self._clock())
        return float(conn.exec_driver_sql(_PG_NOW).scalar_one())

    def _read_now(self, tx: Tx) -> tuple[float, str]:
        if self.clock_source == "service":
            found = tx.meta.get_many(_READ_META)
            return max(self._clock(), float(found.get("clock_last") or 0.0)), found.get("incarnation", "")
        row = tx.conn.exec_driver_sql(_PG_CLOCK_READ).one()
        return max([float(row.now), *_floats(row.last, row.head_at)]), row.incarnation or ""

    @staticmethod
    def _expect_clock(tx: Tx) -> None:
        """`_read_now`'s statement sent now (`Raw.later`), read when the clock is first asked."""
        rows = Raw(tx.conn).later(_PG_CLOCK_READ, {})

        def taken() -> tuple[float, str]:
            ((now, last, incarnation, head_at),) = rows()
            return max([float(now), *_floats(last, head_at)]), incarnation or ""

        tx._authority = taken

    def _write_now(self, tx: Tx) -> tuple[float, str]:
        """A write's clock: the source, at least `meta.clock_last` and the last event time of
        each chain the write holds (of every chain, for a whole-ledger write). Whole-ledger
        writes, and every write on SQLite, move `meta.clock_last`; a chain's own guard moves
        with its events."""
        gate = tx.audit.gate
        if tx.start is not None:
            source, last, incarnation, floor = tx.start.take()
        else:
            # A writer will most likely sign: the service key comes with the clock.
            found = tx.meta.get_many(_WRITE_META)
            source, incarnation = float(self._clock()), found.get("incarnation", "")
            last = float(found["clock_last"]) if "clock_last" in found else None
            floor = tx.audit.latest_at() if gate.exclusive and not self.is_sqlite else None
        held = (
            [] if gate.exclusive or self.is_sqlite else [tx.audit.head(c or None).at for c in gate.ordered()]
        )
        now = max([source, *_floats(last, floor, *held)])
        if (gate.exclusive or self.is_sqlite) and (last is None or now > last):
            tx.meta.set("clock_last", repr(now))
        return now, incarnation

    def _retryable(self, exc: DBAPIError | _Reconnect | psycopg.Error | sqlite3.Error) -> bool:
        """Driver errors come wrapped (SQLAlchemy statements) or bare (prepared SQL, `_raw`)."""
        if isinstance(exc, _Reconnect):
            return True
        orig = exc.orig if isinstance(exc, DBAPIError) else exc
        if self.is_sqlite:
            text = str(orig)
            return "locked" in text or "busy" in text
        return getattr(orig, "sqlstate", None) in _RETRYABLE_SQLSTATES


class _Start:
    """The statement that starts a PostgreSQL write (the server clock, the clock guard, the
    incarnation, the service key, the first seq and the chain's head), sent when the write
    opens and read when first needed: by the clock, or by the audit chain or `meta` (their
    `settle` hook), whichever comes first."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx
        gate = tx.audit.gate
        self._chain = None if gate.exclusive else gate.ordered()[0]
        sql = _PG_START_LEDGER if self._chain is None else _PG_START_CHAIN
        self._rows = Raw(tx.conn).later(sql, {} if self._chain is None else {"chain": self._chain})
        self._taken: tuple[float, float | None, str, float | None] | None = None
        tx.audit.settle = tx.meta.settle = self.take

    def take(self) -> tuple[float, float | None, str, float | None]:
        """(server clock, clock guard, incarnation, floor); primes the audit chain and meta."""
        if self._taken is not None:
            return self._taken
        tx = self._tx
        tx.audit.settle = tx.meta.settle = None
        (row,) = self._rows()
        now, last, incarnation, service_key, seq = row[:5]
        if self._chain is None:
            tx.audit.prime(None, None, int(seq))
            floor = row[5]
        else:
            head_seq, head_hash, head_at = row[5:8]
            head = EMPTY if head_seq is None else Head(int(head_seq), head_hash, head_at, True)
            tx.audit.prime(self._chain, head, int(seq))
            floor = None
        tx.meta.remember({"clock_last": last, "incarnation": incarnation, "service_key": service_key})
        self._taken = (float(now), None if last is None else float(last), incarnation or "", floor)
        return self._taken


def _lock_sql(locks: list[tuple[bool, int]], *, take: bool) -> str:
    """One statement that takes `locks` in order (or releases them in reverse order)."""
    if take:
        calls = ("pg_advisory_lock_shared(%s)" if shared else "pg_advisory_lock(%s)" for shared, _ in locks)
    else:
        calls = (
            "pg_advisory_unlock_shared(%s)" if shared else "pg_advisory_unlock(%s)"
            for shared, _ in reversed(locks)
        )
    return "SELECT " + ", ".join(calls)


def _after_sync(pipeline: Any, cursor: Any, sql: bytes | str, params: list[int] | None = None) -> None:
    """End the pipeline's segment and send `sql` on `cursor`. Sending may raise the error of
    an earlier statement whose answer arrived meanwhile; `sql` is queued all the same, and
    the cursor gets its answer when the pipeline is read to the end."""
    _end_segment(pipeline)
    cursor.execute(sql, params, prepare=False)


def _quietly(send: Callable[[], None]) -> None:
    """A cleanup on a write that already failed: its error, not this one's, is the answer."""
    with suppress(psycopg.Error):
        send()


def _answered(cursor: Any) -> bool:
    """Whether a statement sent in a pipeline ran and returned its rows."""
    result = None if cursor is None else cursor.pgresult
    return result is not None and result.status == psycopg.pq.ExecStatus.TUPLES_OK


def _end_segment(pipeline: Any) -> None:
    """Queue a Sync in the pipeline without waiting for anything: the statements before it
    form their own implicit transaction (in autocommit), and a statement that failed before
    it no longer makes the server skip those after it. psycopg keeps no public call for
    this; without its private one the Sync is sent at once and waited for (one round trip
    more, same effect)."""
    enqueue = getattr(pipeline, "_enqueue_sync", None)
    if enqueue is None:
        pipeline.sync()
    else:
        enqueue()


class _Reconnect(Exception):
    """A connection was found dead before the transaction's function ran: safe to retry."""


_DATABASE_ERRORS = (DBAPIError, _Reconnect, psycopg.Error)


class _InDoubt(psycopg.OperationalError):
    """The session was lost after COMMIT was sent: the write may or may not have committed,
    so it must not be run again."""


def _flush_held(conn: Connection, *_: Any) -> None:
    """A SQLAlchemy statement runs after the writes `Raw.together` holds (`_raw`)."""
    flush_held(conn.connection.info)


def _sync_pipeline(conn: Connection, *_: Any) -> None:
    pipeline = conn.connection.info.get(PIPELINE)
    if pipeline is not None:
        pipeline.sync()


def _floats(*values: float | str | None) -> list[float]:
    return [float(v) for v in values if v is not None]


def _autocommit_execute(raw: Any, sql: str, keys: list[int]) -> None:
    if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raw.rollback()
    raw.autocommit = True
    try:
        raw.execute(sql, keys)
    finally:
        raw.autocommit = False


def _make_engine(url: str, dialect: str, pool_size: int, max_overflow: int, *, only: bool = False) -> Engine:
    """The engine for `url`; `only`: SQLite's one writing connection (pool of one)."""
    if dialect == "sqlite":
        _create_private_sqlite_file(url)
        # Keep a connection per server thread (anyio's pool has 40): a SQLite connection is
        # cheap to keep and costly to open (a file, the pragmas, a WAL index map). The most
        # recently returned one goes out first: its caches are the warmest.
        on_disk = _beside(url, "") is not None
        size, overflow = (1, 0) if only else (_SQLITE_POOL, _SQLITE_POOL)
        pool = {"pool_size": size, "max_overflow": overflow, "pool_use_lifo": True} if on_disk else {}
        engine = create_engine(
            url,
            connect_args={"isolation_level": None, "check_same_thread": False, "timeout": 30},
            **pool,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        connect_args=_pg_connect_args(url) if dialect == "postgresql" else {},
    )
    if dialect == "postgresql":
        event.listen(engine, "before_cursor_execute", _flush_held)
        event.listen(engine, "after_cursor_execute", _sync_pipeline)
    return engine


def _create_private_sqlite_file(url: str) -> None:
    """Create a new SQLite ledger's file 0600 (and a missing directory 0700) before SQLite
    would create it 0644. An existing file keeps the mode its operator gave it."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    for missing in [d for d in reversed(path.parents) if not d.exists()]:
        missing.mkdir(mode=0o700, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))


def _pg_connect_args(url: str) -> dict[str, Any]:
    """A replica that dies holding the writer gate must not hold it for long: the server
    probes idle sockets (keepalives) and ends sessions idle inside a transaction. Settings
    given in the URL win."""
    given = make_url(url).query
    args: dict[str, Any] = {"application_name": "studiolo"}
    args.update({"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3})
    if "options" not in given:
        args["options"] = (
            "-c idle_in_transaction_session_timeout=60s -c tcp_keepalives_idle=10"
            " -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
        )
    return {k: v for k, v in args.items() if k not in given}


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _sqlite_normal_sync(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.execute("PRAGMA synchronous=NORMAL")


def _beside(url: str, suffix: str) -> str | None:
    """`<ledger><suffix>` beside a SQLite file (the writer lock, the WAL); None in memory."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database + suffix


def _report(hook: Callable[..., None], *args: Any) -> None:
    """Tell a hook, never failing the write for it: an observer that raises (a closed log
    stream, say) must not turn a committed write into an error, nor a group into a failed one."""
    try:
        hook(*args)
    except Exception:  # the hook's own failure is the observer's to see, not the writer's
        _log.exception("a store hook failed")


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
