"""The SQLite back-end: WAL, `BEGIN IMMEDIATE` for every write, one writer for the file.

A process's concurrent writes commit in groups, each write in its own savepoint of one
transaction with one fsync (`group.py`). A group first takes a blocking `flock` on
`<ledger>.writer-lock` (the *writer lock*): several server processes (`serve --workers N`)
queue in the kernel instead of busy-waiting in SQLite's busy handler, which sleeps up to
100 ms between tries. A write may be marked not durable (a lease extension): it commits with
`synchronous=NORMAL`, no fsync of its own; the next durable commit's fsync of the WAL carries
it, and losing it only shortens a lease (`store.write(volatile(fn))`).

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
durable group's writes during its fsync; a read therefore waits, before it answers, until
every group this process had begun is durable (`GroupCommit.barrier`), so no reader is told
what a power failure could take back — within one process; with `serve --workers N` a read
may see another process's group during its fsync. A failed fsync fails the group's durable
callers with the error although the writes were applied.
Kill -9 of the process loses nothing either way: written frames are in the kernel's cache.

The ledger holds the service signing key, so a new SQLite file is created 0600 (SQLite gives
its -wal and -shm files the database file's mode) and a missing directory for it 0700.

The authority clock is the injected service clock, at least `meta.clock_last`, which every
write moves (one writer for the whole file: there are no chains to read the guard from).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from studiolo.store._raw import Bare
from studiolo.store.authsignal import AuthSignal
from studiolo.store.backend import Tx, guarded_now, run_job, service_read, service_start
from studiolo.store.gate import Gate
from studiolo.store.group import GroupCommit, Job, Settle, Volatile, volatile

__all__ = ["SQLiteBackend"]

T = TypeVar("T")
Clock = Callable[[], float]

_POOL = 48


class SQLiteBackend:
    """SQLite (`Backend`): a process's writes commit in groups under the file's writer lock."""

    dialect = "sqlite"

    def __init__(
        self,
        url: str,
        *,
        clock: Clock,
        writing: threading.local,
        observed: Callable[[int, float], None],
        fsync: Callable[[int], None] = os.fsync,
    ) -> None:
        self._clock = clock
        self._writing = writing  # the store's: a nested write would wait for itself
        self.engine: Engine = _make_engine(url)
        # On a file the group commit always writes on one connection of its own. SQLite
        # empties a connection's page cache when another connection wrote, and each
        # connection keeps its own prepared statements: a pooled connection, taken in turn,
        # would start most groups cold.
        ledger_file = _beside(url, "")
        self.writes: Engine = self.engine
        if ledger_file is not None:
            self.writes = _make_engine(url, only=True)
            # It only ever commits groups, each made durable by `_sync_wal` when it must be:
            # NORMAL for good, rather than switched to and fro around every group.
            event.listen(self.writes, "connect", _normal_sync)
        self._local_writer = threading.Lock()
        self._lock_path = _beside(url, ".writer-lock")
        self._lock_fd: int | None = None
        self._wal_path = _beside(url, "-wal")
        # bumped after every write that ends a token's or grant's power (`authsignal.py`);
        # beside the real file, as SQLite puts its -wal and -shm, whatever path reached it
        self.auth_signal: AuthSignal | None = None
        if ledger_file:
            self.auth_signal = AuthSignal(os.path.realpath(ledger_file) + ".auth-signal")
        self.fsync = fsync  # the WAL's fsync after a durable group (tests make it slow)
        self.group = GroupCommit(self._commit_group, self._local_writer)
        self.group.observed = observed

    def dispose(self) -> None:
        self.engine.dispose()
        if self.writes is not self.engine:
            self.writes.dispose()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # writes -----------------------------------------------------------------------
    def write_once(self, fn: Callable[[Tx], T], gate: Gate) -> T:
        """One writer for the whole file: the gate only bounds the chains `fn` may append to."""
        return self.group.submit(_within(gate, fn))

    def _commit_group(self, jobs: list[Job[Any]]) -> Settle | None:
        """Run queued writes, each in its savepoint, in one transaction (`group.py`).

        The COMMIT runs with `synchronous=NORMAL` (no fsync) on a file ledger; a durable
        group returns the fsync of the WAL, which the group commit runs after releasing the
        locks and before answering its callers. A ledger with no WAL path (in memory) keeps
        `synchronous=FULL` for a durable group."""
        deferred = self._wal_path is not None  # then `writes` is the writing connection, NORMAL
        durable = any(job.durable for job in jobs)
        light = not deferred and not durable
        with self._writer_lock(), self.writes.connect() as conn:
            if light:
                conn.exec_driver_sql("PRAGMA synchronous=NORMAL")
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                try:
                    # The savepoint's statements go to the driver: SQLAlchemy's execution
                    # machinery costs more than SQLite's work here (two statements every write).
                    driver: Any = conn.connection.dbapi_connection
                    whole = Gate.whole_ledger()
                    for job in jobs:
                        run_job(
                            job,
                            lambda: self.open(conn, write=True, gate=whole),
                            self._writing,
                            driver.execute,
                        )
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
            self.fsync(fd)
        finally:
            os.close(fd)

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        """The cross-process writer lock (a blocking flock; the caller holds `_local_writer`,
        so one thread per process waits here). In memory: nothing."""
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
    def exclusive(self) -> Iterator[Connection]:
        with self._local_writer, self._writer_lock(), self.engine.connect() as conn, self.migrating(conn):
            yield conn

    @contextmanager
    def migrating(self, conn: Connection) -> Iterator[None]:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    # reads ------------------------------------------------------------------------
    def read_once(self, fn: Callable[[Tx], T], *, settled: bool, batched: bool) -> T:
        """The answer waits until what this process committed before it is durable (a
        durable group's fsync runs after its COMMIT), unless `settled` is False or the read
        runs inside a write. No round trips: `batched` changes nothing."""
        with self.engine.connect() as conn:
            conn.exec_driver_sql("BEGIN")
            try:
                found = fn(self.open(conn, write=False, gate=Gate.whole_ledger()))
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        if settled and not getattr(self._writing, "active", False):
            self.group.barrier()
        return found

    def glance(self, read: Callable[[Bare], T]) -> T:
        """`read` on a pooled driver connection (they autocommit)."""
        pooled = self.engine.raw_connection()
        try:
            return read(Bare(pooled.dbapi_connection, pg=False))
        finally:
            pooled.close()

    def read_ahead(self, read: Callable[[Bare], T]) -> T | None:
        return None  # no round trips to save

    def batch_gate(self, gate_of: Callable[[], Gate]) -> Gate:
        return Gate.whole_ledger()  # one writer whatever the gate

    # the clock --------------------------------------------------------------------
    def open(self, conn: Connection, *, write: bool, gate: Gate) -> Tx:
        tx = Tx(conn, gate, sequence=False)
        if not write:
            tx._authority = lambda: service_read(tx, self._clock)
            return tx
        tx._authority = lambda: guarded_now(tx, service_start(tx, self._clock, every=True), every=True)
        _ = tx.now  # a writer reads the clock first thing
        return tx

    def authority_clock(self, conn: Connection) -> float:
        return float(self._clock())

    def retryable(self, exc: BaseException) -> bool:
        orig = exc.orig if isinstance(exc, DBAPIError) else exc
        if not isinstance(orig, sqlite3.Error):
            return False
        text = str(orig)
        return "locked" in text or "busy" in text


def _within(gate: Gate, fn: Callable[[Tx], T]) -> Callable[[Tx], T]:
    """`fn` on a transaction that may append only to `gate`'s chains (volatile if `fn` is)."""

    def run(tx: Tx) -> T:
        tx.audit.gate = gate
        return fn(tx)

    return volatile(run) if isinstance(fn, Volatile) else run


def _make_engine(url: str, *, only: bool = False) -> Engine:
    """The engine for `url`; `only`: the one writing connection (pool of one)."""
    _create_private_file(url)
    # Keep a connection per server thread (anyio's pool has 40): a SQLite connection is
    # cheap to keep and costly to open (a file, the pragmas, a WAL index map). The most
    # recently returned one goes out first: its caches are the warmest.
    on_disk = _beside(url, "") is not None
    size, overflow = (1, 0) if only else (_POOL, _POOL)
    pool = {"pool_size": size, "max_overflow": overflow, "pool_use_lifo": True} if on_disk else {}
    engine = create_engine(
        url,
        connect_args={"isolation_level": None, "check_same_thread": False, "timeout": 30},
        **pool,
    )
    event.listen(engine, "connect", _pragmas)
    return engine


def _create_private_file(url: str) -> None:
    """Create a new ledger's file 0600 (and a missing directory 0700) before SQLite would
    create it 0644. An existing file keeps the mode its operator gave it."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    for missing in [d for d in reversed(path.parents) if not d.exists()]:
        missing.mkdir(mode=0o700, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))


def _pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _normal_sync(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.execute("PRAGMA synchronous=NORMAL")


def _beside(url: str, suffix: str) -> str | None:
    """`<ledger><suffix>` beside the file (the writer lock, the WAL); None in memory."""
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database + suffix
