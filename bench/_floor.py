"""The SQL floor of a completion: the statements it ran, replayed raw through `sqlite3`.

`Recorder` makes a Store's SQLite connections log every statement with its parameters (and
each commit), and the fsync of the WAL a durable group runs after its COMMIT (`FSYNC`: the
store commits with `synchronous=NORMAL` under its locks and syncs after letting go of them).
`Floor` replays the logged statements of one completion at a time, in order, on a copy of
the ledger taken before those completions ran, and fsyncs its own WAL where the store did:
the same statements and the same fsync on the same state, with nothing in between but the
driver.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event

from studiolo.store import Store

__all__ = ["FSYNC", "Floor", "Recorder"]

Statement = tuple[str, Any]
FSYNC = "-- fsync of the WAL"  # a log entry that is not SQL: the store's fsync after COMMIT


class _Cursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        log = getattr(self.connection, "log", None)
        if log is not None:
            log.append((sql, parameters))
        return super().execute(sql, parameters)


class _Connection(sqlite3.Connection):
    log: list[Statement] | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if self.log is not None:
            self.log.append((sql, parameters))
        return super().execute(sql, parameters)

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or _Cursor)

    def commit(self) -> None:
        if self.log is not None:
            self.log.append(("COMMIT", ()))
        super().commit()


class Recorder:
    """Log the statements `store` runs while `recording()` is on."""

    def __init__(self, store: Store) -> None:
        self.log: list[Statement] = []
        self._on = False

        def factory(_dialect: Any, _rec: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
            cparams["factory"] = _Connection

        def checkout(dbapi: Any, _rec: Any, _proxy: Any) -> None:
            dbapi.log = self.log if self._on else None

        for engine in {store.engine, store.backend.writes}:  # the pool, and the writing connection
            event.listen(engine, "do_connect", factory)
            event.listen(engine, "checkout", checkout)
            engine.dispose()  # later connections come from the factory
        sync = store.backend.fsync

        def fsync(fd: int) -> None:
            if self._on:
                self.log.append((FSYNC, ()))
            sync(fd)

        store.backend.fsync = fsync

    def record(self, fn: Callable[[], object]) -> list[Statement]:
        self.log.clear()
        self._on = True
        try:
            fn()
        finally:
            self._on = False
        out = list(self.log)
        self.log.clear()
        return out


def snapshot(store: Store, target: Path) -> None:
    """A consistent copy of the store's SQLite file (the backup API)."""
    url = store.engine.url.database
    assert url is not None
    with sqlite3.connect(url) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


class Floor:
    """Replay logged completions on a copy of the ledger, one completion per call."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.wal = f"{path}-wal"
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON"):
            self.conn.execute(f"PRAGMA {pragma}").fetchall()

    def replay(self, statements: list[Statement]) -> float:
        conn = self.conn
        t0 = time.perf_counter()
        for sql, params in statements:
            if sql is FSYNC:
                self._fsync()
            else:
                conn.execute(sql, params).fetchall()
        return time.perf_counter() - t0

    def _fsync(self) -> None:
        """As the store does it: the WAL opened afresh, synced, closed."""
        fd = os.open(self.wal, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def calls(self, logs: list[list[Statement]]) -> list[Callable[[], float]]:
        return [lambda log=log: self.replay(log) for log in logs]
