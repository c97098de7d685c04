"""The storage port: one `Store` that runs functions inside serializable transactions.

SQLite: WAL, `BEGIN IMMEDIATE` for every write (one writer at a time, so the state a
transaction reads is the state it commits on). PostgreSQL: SERIALIZABLE with bounded,
jittered retry on serialization failures.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from studiolo.store.access import AccessRepo
from studiolo.store.audit import AuditRepo, MetaRepo
from studiolo.store.content import ContentRepo
from studiolo.store.evidence import EvidenceRepo
from studiolo.store.schema import metadata
from studiolo.store.work import WorkRepo

__all__ = ["Store", "Tx"]

T = TypeVar("T")
Clock = Callable[[], float]

_RETRYABLE_SQLSTATES = {"40001", "40P01"}


@dataclass
class Tx:
    """One transaction: the repositories over one connection, plus the authority clock."""

    conn: Connection
    access: AccessRepo
    work: WorkRepo
    content: ContentRepo
    evidence: EvidenceRepo
    audit: AuditRepo
    meta: MetaRepo
    now: float  # the authority clock, read once at the start of the transaction
    incarnation: str


class Store:
    def __init__(self, url: str, *, clock: Clock = time.time, max_retries: int = 8) -> None:
        self.url = url
        self._clock = clock
        self._max_retries = max_retries
        self.dialect = make_url(url).get_backend_name()
        self.engine: Engine = _make_engine(url, self.dialect)

    def create_schema(self) -> None:
        metadata.create_all(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()

    def write(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn` in one serializable write transaction; retry on serialization failure."""
        for attempt in range(self._max_retries + 1):
            try:
                with self._transaction(write=True) as tx:
                    return fn(tx)
            except (OperationalError, IntegrityError, DBAPIError) as exc:
                if attempt >= self._max_retries or not self._retryable(exc):
                    raise
                time.sleep(random.uniform(0, 0.002 * 2**attempt))
        raise AssertionError("unreachable")

    def read(self, fn: Callable[[Tx], T]) -> T:
        with self._transaction(write=False) as tx:
            return fn(tx)

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Tx]:
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
            else:
                conn = conn.execution_options(isolation_level="SERIALIZABLE")
                conn.begin()
            try:
                tx = self._open(conn, write=write)
                yield tx
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def _open(self, conn: Connection, *, write: bool) -> Tx:
        meta = MetaRepo(conn)
        incarnation = meta.get("incarnation") or ""
        now = self._authority_now(conn, meta, write=write)
        return Tx(
            conn=conn,
            access=AccessRepo(conn),
            work=WorkRepo(conn),
            content=ContentRepo(conn),
            evidence=EvidenceRepo(conn),
            audit=AuditRepo(conn),
            meta=meta,
            now=now,
            incarnation=incarnation,
        )

    def _authority_now(self, conn: Connection, meta: MetaRepo, *, write: bool) -> float:
        if self.dialect == "postgresql":
            value = conn.exec_driver_sql("SELECT EXTRACT(EPOCH FROM clock_timestamp())").scalar()
            return float(value)  # type: ignore[arg-type]
        last = float(meta.get("clock_last") or 0.0)
        now = max(self._clock(), last)
        if write and now > last:
            meta.set("clock_last", repr(now))
        return now

    def _retryable(self, exc: Exception) -> bool:
        if self.dialect == "sqlite":
            return "locked" in str(exc) or "busy" in str(exc)
        orig: Any = getattr(exc, "orig", None)
        state = getattr(orig, "sqlstate", None)
        if state in _RETRYABLE_SQLSTATES:
            return True
        # Two appends racing for the next audit sequence number: serialize by retrying.
        return state == "23505" and "events_pkey" in str(exc)


def _make_engine(url: str, dialect: str) -> Engine:
    if dialect == "sqlite":
        engine = create_engine(
            url,
            connect_args={"isolation_level": None, "check_same_thread": False, "timeout": 30},
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()
