"""The PostgreSQL back-end: writer gates, a project's writes in groups, psycopg's pipeline.

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

The authority clock is read once per transaction, after the gate: the database server's
clock (`clock_timestamp()`; tests may inject the service clock, `clock_source="service"`).
It never moves backwards within an incarnation: it is at least `meta.clock_last` (moved by
whole-ledger writes) and the time of the last event of every chain the write holds.

SQL is sent as psycopg allows with public calls only: a write's statements in pipeline
mode, its gate, BEGIN and first read in one round trip, COMMIT and the gate's release in
one more (`_write`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any, TypeVar

import psycopg
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from studiolo.store._raw import PIPELINE, Bare, Raw
from studiolo.store.audit import EMPTY, Head
from studiolo.store.authsignal import AuthSignal
from studiolo.store.backend import (
    Reconnect,
    Tx,
    floats,
    guarded_now,
    run_job,
    service_read,
    service_start,
)
from studiolo.store.gate import Gate, chain_key
from studiolo.store.group import GroupCommit, Job

__all__ = ["MIGRATION_LOCK", "WRITER_GATE", "PostgresBackend"]

T = TypeVar("T")
Clock = Callable[[], float]

WRITER_GATE = 0x5354_4C4F_0001  # pg_advisory_lock key of the writer gate ("STLO" 1)
MIGRATION_LOCK = 0x5354_4C4F_0002  # held while migrating or restoring
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
_MAX_GROUP = 16  # writes of one project committed together, at most

# The first statement of a write, one round trip: the server clock, the clock guard, the
# incarnation, the seq of the first event, and the head of the write's chain.
_START_CHAIN = """
SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) AS now,
       (SELECT value FROM meta WHERE key = 'clock_last') AS last,
       (SELECT value FROM meta WHERE key = 'incarnation') AS incarnation,
       (SELECT value FROM meta WHERE key = 'service_key') AS service_key,
       nextval('events_seq') AS seq, h.seq AS head_seq, h.hash AS head_hash, h.at AS head_at
  FROM (SELECT 1) AS one LEFT JOIN chains AS h ON h.chain = :chain
"""
_START_LEDGER = """
SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) AS now,
       (SELECT value FROM meta WHERE key = 'clock_last') AS last,
       (SELECT value FROM meta WHERE key = 'incarnation') AS incarnation,
       (SELECT value FROM meta WHERE key = 'service_key') AS service_key,
       nextval('events_seq') AS seq, (SELECT max(at) FROM chains) AS head_at
"""
_BEGIN = {level: f"BEGIN ISOLATION LEVEL {level}".encode() for level in ("REPEATABLE READ", "SERIALIZABLE")}
_BEGIN_READ = b"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_NOW = "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)"
_CLOCK_READ = """
SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) AS now,
       (SELECT value FROM meta WHERE key = 'clock_last') AS last,
       (SELECT value FROM meta WHERE key = 'incarnation') AS incarnation,
       (SELECT max(at) FROM chains) AS head_at
"""


class PostgresBackend:
    """PostgreSQL (`Backend`): the writer gates, a project's writes committed in groups."""

    dialect = "postgresql"
    auth_signal: AuthSignal | None = None  # other processes read revocations from the database

    def __init__(
        self,
        url: str,
        *,
        clock: Clock,
        database_clock: bool,
        writing: threading.local,
        observed: Callable[[int, float], None],
        pool_size: int,
        max_overflow: int,
        writer_gate: bool,
    ) -> None:
        self._clock = clock
        self._database_clock = database_clock
        self._writing = writing  # the store's: a nested write would wait for itself
        self._observed = observed
        self.writer_gate = writer_gate
        self.engine: Engine = create_engine(
            url,
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_recycle=1800,
            connect_args=_connect_args(url),
        )
        event.listen(self.engine, "after_cursor_execute", _sync_pipeline)
        self._local_writer = threading.Lock()  # whole-ledger writers of this process
        self._chain_locks: dict[str, threading.Lock] = {}  # one writer per chain per process
        self._chain_locks_guard = threading.Lock()
        self._chain_groups: dict[str, GroupCommit] = {}  # a project's writes commit in groups
        self.regrouped = 0  # groups run again write by write after a database error

    def dispose(self) -> None:
        self.engine.dispose()

    # writes -----------------------------------------------------------------------
    def write_once(self, fn: Callable[[Tx], T], gate: Gate) -> T:
        grouped = self.chain_group(gate)
        if grouped is not None:
            return grouped.submit(fn)
        with self._local(gate):
            return self._alone(fn, gate)

    def _alone(self, fn: Callable[[Tx], T], gate: Gate) -> T:
        """One write in a transaction of its own (the caller holds the gate's local locks)."""
        with self._transaction(write=True, gate=gate) as tx:
            self._writing.active = True
            try:
                return fn(tx)
            finally:
                self._writing.active = False

    def chain_group(self, gate: Gate) -> GroupCommit | None:
        """Under the writer gates: the group commit of a one-chain gate (a project's
        writes), whose leader lock is the chain's local lock; else None."""
        if not self.writer_gate or gate.exclusive or gate.chains is None or len(gate.chains) != 1:
            return None
        (chain,) = gate.chains
        group = self._chain_groups.get(chain)
        if group is None:
            with self._chain_locks_guard:
                lock = self._chain_locks.setdefault(chain, threading.Lock())
                commit = functools.partial(self._commit_chain_group, gate)
                group = self._chain_groups.setdefault(chain, GroupCommit(commit, lock, _MAX_GROUP))
                group.observed = self._observed
        return group

    def _commit_chain_group(self, gate: Gate, jobs: list[Job[Any]]) -> None:
        """A project's queued writes in one transaction under its gate, each in
        its own savepoint, in queue order (`group.py`): the gate, BEGIN and COMMIT are paid
        once. A write that raises is rolled back to its savepoint and fails alone. A
        database error, which cannot be told apart from the others' (a failed statement
        aborts the transaction and everything sent after it), fails no one: the writes are
        run again, each in a transaction of its own. A session lost after COMMIT was sent
        fails them all, as it fails a write alone: it may have committed."""
        if len(jobs) > 1:
            try:
                self._group(gate, jobs)
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
                job.result = job.context.run(self._alone, job.fn, gate)
            except Exception as exc:
                job.error = exc
        return None

    def _group(self, gate: Gate, jobs: list[Job[Any]]) -> None:
        with self.engine.connect() as conn, self._write(conn, gate):
            raw = Raw(conn)  # the savepoints travel with the writes' own statements
            for job in jobs:
                # a database error perhaps aborted the transaction: it ends the group
                opened = functools.partial(self.open, conn, write=True, gate=gate)
                run_job(job, opened, self._writing, lambda sql: raw.send(sql, {}), _DATABASE_ERRORS)

    @contextmanager
    def _local(self, gate: Gate) -> Iterator[None]:
        """The process-local side of the gate: one thread per chain waits."""
        if gate.exclusive:
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
    def _transaction(self, *, write: bool, gate: Gate, batched: bool = False) -> Iterator[Tx]:
        with self.engine.connect() as conn:
            if write:
                with self._write(conn, gate):
                    yield self.open(conn, write=True, gate=gate)
                return
            if batched:
                with self._read(conn):
                    yield self.open(conn, write=False, gate=gate)
                return
            conn = conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            conn.begin()
            try:
                yield self.open(conn, write=False, gate=gate)
                conn.commit()
            except BaseException as exc:
                # a statement through `Raw` meets a dead session as the driver's own error,
                # which SQLAlchemy never saw: a read has no effects, so it is rerun
                raw: Any = conn.connection.dbapi_connection
                if isinstance(exc, Exception) and raw is not None and raw.broken:
                    conn.invalidate()
                    raise Reconnect(str(exc)) from exc
                conn.rollback()
                raise

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

    @contextmanager
    def _write(self, conn: Connection, gate: Gate) -> Iterator[None]:
        """A PostgreSQL write in psycopg's pipeline mode, in as few round trips as its reads
        allow, with public calls only. The driver is in autocommit for it, so psycopg sends
        no BEGIN of its own; the write sends, without waiting for any answer:

        - the gate's session locks (`_gate_locks`) in one statement and a COMMIT that ends
          its implicit transaction (so that the next BEGIN may set its isolation level; the
          server warns that no transaction was open), then `BEGIN ISOLATION LEVEL ...` and the
          statement that reads the clock and chain head (`_Start`): the server runs them in
          order, so the snapshot is taken after the locks are granted. They travel with the
          function's first read.
        - the function's statements: a read that needs its answer waits for it (reads sent
          with `Raw.later` share one round trip), a write without one travels with the next.
        - COMMIT (ROLLBACK if the function raised), the locks' release, and the Sync of
          leaving pipeline mode: one round trip.

        A statement that failed (a write whose answer nobody waited for) makes the server
        skip what follows it up to the Sync, COMMIT and the release included; psycopg raises
        its error when the pipeline ends, and `_settle` then rolls the transaction back and
        releases the locks (two round trips, on that path only). A connection that breaks
        before COMMIT was sent is a safe retry (`Reconnect`); one that cannot be settled is
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
                    opening = raw.cursor()  # one cursor for the statements nobody reads
                    if locks:
                        opening.execute(_lock_sql(locks, take=True), [k for _, k in locks], prepare=False)
                        opening.execute(b"COMMIT", prepare=False)
                    opening.execute(_BEGIN[self._write_isolation(gate)], prepare=False)
                    yield  # the caller opens its `Tx` (or one per write of a group) and runs
                    commit = raw.cursor()
                    _send(commit, b"COMMIT")
                except BaseException:  # the write's own error propagates, not a cleanup's
                    _quietly(lambda: _send(raw.cursor(), b"ROLLBACK"))
                    if unlock is not None:
                        release = raw.cursor()
                        _quietly(lambda: _send(release, *unlock))
                    raise
                finally:
                    conn.connection.info.pop(PIPELINE, None)
                if unlock is not None:
                    release = raw.cursor()
                    _send(release, *unlock)  # an error here is the write's: it is queued all the same
        except BaseException as exc:
            if raw.broken and commit is None:  # the session died before COMMIT: run it again
                raise Reconnect(str(exc)) from exc
            if raw.broken and isinstance(exc, Exception):  # after COMMIT was sent: who knows
                raise _InDoubt(str(exc)) from exc
            raise
        finally:
            _settle(conn, unlock, release)
        if commit.statusmessage != "COMMIT":  # psycopg raised the error that aborted it, or:
            raise psycopg.errors.InFailedSqlTransaction("the write was rolled back, not committed")
        if not conn.invalidated:
            conn.commit()  # SQLAlchemy's bookkeeping: the driver's transaction already ended

    @contextmanager
    def _read(self, conn: Connection) -> Iterator[None]:
        """A PostgreSQL read in psycopg's pipeline mode (`Store.read(batched=True)`). The
        driver is in autocommit for it and the read sends its own `BEGIN ... READ ONLY`,
        which travels with the first statement; reads sent with `Raw.later` share a round
        trip; COMMIT and the Sync of leaving pipeline mode end it in one more. A session
        that broke is retried (`Reconnect`: a read has no effects)."""
        raw: Any = conn.connection.dbapi_connection
        raw.autocommit = True
        try:
            with raw.pipeline() as pipeline:  # leaving it sends a Sync and reads every answer
                conn.connection.info[PIPELINE] = pipeline
                try:
                    raw.execute(_BEGIN_READ, prepare=False)
                    yield
                    _send(raw.cursor(), b"COMMIT")
                except BaseException:  # the read's own error propagates, not a cleanup's
                    _quietly(lambda: _send(raw.cursor(), b"ROLLBACK"))
                    raise
                finally:
                    conn.connection.info.pop(PIPELINE, None)
        except BaseException as exc:
            if raw.broken and isinstance(exc, Exception):
                raise Reconnect(str(exc)) from exc
            raise
        finally:
            _settle(conn, None, None)
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
            raise Reconnect(str(exc)) from exc
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

    def open(self, conn: Connection, *, write: bool, gate: Gate) -> Tx:
        tx = Tx(conn, gate, sequence=True)
        if not self._database_clock:  # a controllable clock (tests)
            if write:
                tx._authority = lambda: guarded_now(
                    tx, service_start(tx, self._clock, every=False), every=False
                )
                _ = tx.now  # a writer reads the clock first thing
            else:
                tx._authority = lambda: service_read(tx, self._clock)
            return tx
        if not write:
            tx._authority = lambda: _read_now(tx)
            if PIPELINE in conn.connection.info:  # a batched read: the clock travels with its first read
                _clock_ahead(tx)
            return tx
        # Sent first thing, right after the gate; its answer is read when first needed (it
        # comes back with the write's first read).
        start = tx.start = _Start(tx)
        tx._authority = lambda: guarded_now(tx, start.take(), every=False)
        return tx

    def authority_clock(self, conn: Connection) -> float:
        """The authority's clock right now, unguarded (a restore starts its guard afresh)."""
        if not self._database_clock:
            return float(self._clock())
        return float(conn.exec_driver_sql(_NOW).scalar_one())

    def retryable(self, exc: BaseException) -> bool:
        """Serialization failures and deadlocks. Driver errors come wrapped (SQLAlchemy
        statements) or bare (prepared SQL, `_raw`)."""
        orig = exc.orig if isinstance(exc, DBAPIError) else exc
        return isinstance(orig, psycopg.Error) and orig.sqlstate in _RETRYABLE_SQLSTATES

    # reads ------------------------------------------------------------------------
    def read_once(self, fn: Callable[[Tx], T], *, settled: bool, batched: bool) -> T:
        """REPEATABLE READ, READ ONLY. `batched`: in psycopg's pipeline mode (`_read`), so
        reads sent with `Raw.later` share one round trip and BEGIN travels with the first."""
        with self._transaction(write=False, gate=Gate.whole_ledger(), batched=batched) as tx:
            return fn(tx)

    def glance(self, read: Callable[[Bare], T]) -> T:
        """`read` on a pooled psycopg connection switched to autocommit: one
        statement, without the BEGIN and COMMIT (two round trips)."""
        pooled = self.engine.raw_connection()
        try:
            driver: Any = pooled.dbapi_connection
            driver.autocommit = True
            try:
                return read(Bare(driver, pg=True))
            finally:
                driver.autocommit = False
        finally:
            pooled.close()

    def read_ahead(self, read: Callable[[Bare], T]) -> T | None:
        """A read sent before the writer gate saves round trips inside it."""
        return self.glance(read)

    def batch_gate(self, gate_of: Callable[[], Gate]) -> Gate:
        return gate_of()

    @contextmanager
    def exclusive(self) -> Iterator[Connection]:
        with self._local_writer, self.engine.connect() as conn, self.migrating(conn):
            yield conn

    @contextmanager
    def migrating(self, conn: Connection) -> Iterator[None]:
        whole = Gate.whole_ledger()
        with self._session_locks(conn, [(False, MIGRATION_LOCK)]), self._gated(conn, whole), conn.begin():
            yield


def _read_now(tx: Tx) -> tuple[float, str]:
    row = tx.conn.exec_driver_sql(_CLOCK_READ).one()
    return max([float(row.now), *floats(row.last, row.head_at)]), row.incarnation or ""


def _clock_ahead(tx: Tx) -> None:
    """`_read_now`'s statement sent now (`Raw.later`), read when the clock is first asked."""
    rows = Raw(tx.conn).later(_CLOCK_READ, {})

    def taken() -> tuple[float, str]:
        ((now, last, incarnation, head_at),) = rows()
        return max([float(now), *floats(last, head_at)]), incarnation or ""

    tx._authority = taken


class _Start:
    """The statement that starts a PostgreSQL write (the server clock, the clock guard, the
    incarnation, the service key, the first seq and the chain's head), sent when the write
    opens and read when first needed: by the clock, or by the audit chain or `meta` (their
    `settle` hook), whichever comes first."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx
        gate = tx.audit.gate
        self._chain = None if gate.exclusive else gate.ordered()[0]
        sql = _START_LEDGER if self._chain is None else _START_CHAIN
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


def _send(cursor: Any, sql: bytes | str, params: list[int] | None = None) -> None:
    """Send `sql` on `cursor` in the pipeline. Sending may raise the error of an earlier
    statement whose answer arrived meanwhile; `sql` is queued all the same, and the cursor
    gets its answer (or is skipped) when the pipeline is read to the end."""
    cursor.execute(sql, params, prepare=False)


def _quietly(send: Callable[[], None]) -> None:
    """A cleanup on a write that already failed: its error, not this one's, is the answer."""
    with suppress(psycopg.Error):
        send()


def _answered(cursor: Any) -> bool:
    """Whether a statement sent in a pipeline ran and returned its rows."""
    result = None if cursor is None else cursor.pgresult
    return result is not None and result.status == psycopg.pq.ExecStatus.TUPLES_OK


def _settle(conn: Connection, unlock: tuple[str, list[int]] | None, release: Any) -> None:
    """After a pipelined transaction: the connection out of autocommit, idle, with the gate's
    locks released. A statement that failed made the server skip the end (COMMIT or
    ROLLBACK, the release): roll back and release now. A connection that cannot be
    settled is invalidated (ending the session frees its locks)."""
    raw: Any = conn.connection.dbapi_connection
    if raw.broken:
        conn.invalidate()
        return
    try:
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raw.execute(b"ROLLBACK", prepare=False)
        if unlock is not None and not _answered(release):
            raw.execute(*unlock, prepare=False)
        raw.autocommit = False
    except psycopg.Error:
        conn.invalidate()


_DATABASE_ERRORS = (DBAPIError, Reconnect, psycopg.Error)


class _InDoubt(psycopg.OperationalError):
    """The session was lost after COMMIT was sent: the write may or may not have committed,
    so it must not be run again."""


def _sync_pipeline(conn: Connection, *_: Any) -> None:
    pipeline = conn.connection.info.get(PIPELINE)
    if pipeline is not None:
        pipeline.sync()


def _autocommit_execute(raw: Any, sql: str, keys: list[int]) -> None:
    if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raw.rollback()
    raw.autocommit = True
    try:
        raw.execute(sql, keys)
    finally:
        raw.autocommit = False


def _connect_args(url: str) -> dict[str, Any]:
    """A replica that dies holding the writer gate must not hold it for long: the server
    probes idle sockets (keepalives) and ends sessions idle inside a transaction. Notices
    are not sent: nothing here reads them (psycopg drops them without a handler), and the
    COMMIT after a gate's locks draws a WARNING every write. Settings given in the URL win."""
    given = make_url(url).query
    args: dict[str, Any] = {"application_name": "studiolo"}
    args.update({"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3})
    if "options" not in given:
        args["options"] = (
            "-c client_min_messages=error -c idle_in_transaction_session_timeout=60s"
            " -c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"
        )
    return {k: v for k, v in args.items() if k not in given}
