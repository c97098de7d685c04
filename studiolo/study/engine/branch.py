"""A ledger that explores branches of history, for the engine mode.

:class:`BranchStore` is a :class:`~studiolo.store.Store` that borrows one connection
holding an open write transaction (from ``Store.exclusive()``).  Every transaction of the
door (``write`` / ``read``) runs as a SAVEPOINT of it: released when the door's function
returns, rolled back when it raises — the same all-or-nothing the door gets from
``BEGIN IMMEDIATE … COMMIT``, and the function, its reads and its writes are the door's own
code and SQL.  :meth:`BranchStore.branch` opens a savepoint that is always rolled back, so
the explorer can run one continuation of a history, undo it, and run the next from the same
state.  Nothing is durable: the point is the completion transaction's logic, not fsync.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy import Connection

from studiolo.store import Store, Tx

__all__ = ["BranchStore", "StudyClock"]

T = TypeVar("T")


class StudyClock:
    """The injected service clock: it moves only when the study says so (``expire``)."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class BranchStore(Store):
    """Door transactions as savepoints of one open write transaction (see the module doc).

    It has no engine of its own — it borrows ``base``'s connection — so it does not call
    ``Store.__init__``; only ``write``, ``read`` and ``branch`` are meant to be used.
    """

    def __init__(self, base: Store, conn: Connection, clock: StudyClock) -> None:
        self.url = base.url
        self.dialect = base.dialect
        self.is_sqlite = base.is_sqlite
        self.clock_source = base.clock_source
        self.writer_gate = False
        self.engine = base.engine
        self._local_writer = threading.Lock()
        self.retries = 0
        self._base = base
        self._conn = conn
        self._study_clock = clock
        self._depth = 0

    def write(self, fn: Callable[[Tx], T]) -> T:
        return self._atomic(fn, write=True)

    def read(self, fn: Callable[[Tx], T]) -> T:
        return self._atomic(fn, write=False)

    @contextmanager
    def branch(self) -> Iterator[None]:
        """Run a continuation, then undo it: the ledger and the clock as they were."""
        name = self._savepoint()
        saved = self._study_clock.now
        try:
            yield
        finally:
            self._undo(name)
            self._study_clock.now = saved

    def _atomic(self, fn: Callable[[Tx], T], *, write: bool) -> T:
        name = self._savepoint()
        try:
            result = fn(self._base.tx_on(self._conn, write=write))
        except BaseException:
            self._undo(name)
            raise
        self._conn.exec_driver_sql(f"RELEASE {name}")
        self._depth -= 1
        return result

    def _savepoint(self) -> str:
        self._depth += 1
        name = f"branch_{self._depth}"
        self._conn.exec_driver_sql(f"SAVEPOINT {name}")
        return name

    def _undo(self, name: str) -> None:
        self._conn.exec_driver_sql(f"ROLLBACK TO {name}")
        self._conn.exec_driver_sql(f"RELEASE {name}")
        self._depth -= 1
