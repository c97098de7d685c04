"""A ledger that explores branches of history, for the engine mode.

:class:`BranchStore` is a :class:`~studiolo.store.Store` over the one connection that
``Store.exclusive()`` holds in an open write transaction.  Every transaction of the door
(``write`` / ``read``) runs in a nested transaction (a savepoint) of it: released when the
door's function returns, rolled back when it raises — the same all-or-nothing the door gets
from ``BEGIN IMMEDIATE … COMMIT`` — and the function, its reads and its writes are the
door's own code and the store's own SQL.  :meth:`BranchStore.branch` opens a nested
transaction that is always rolled back, so the explorer can run one continuation of a
history, undo it, and run the next from the same state.  Nothing here writes SQL: the
savepoints are the connection's ``begin_nested()``.  Nothing is durable either: the point is
the completion transaction's logic, not fsync.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

from studiolo.clock import ManualClock
from studiolo.store import Store, Tx
from studiolo.store.gate import Gate

__all__ = ["BranchStore", "open_branches"]

T = TypeVar("T")


class _Savepoint(Protocol):
    def commit(self) -> None: ...

    def rollback(self) -> None: ...


class BranchStore(Store):
    """Door transactions as savepoints of one open write transaction (see the module doc).

    It has no engine of its own — it borrows ``base``'s open connection — so it does not call
    ``Store.__init__``; only ``write``, ``read`` and ``branch`` are meant to be used.  Build it
    with :func:`open_branches`.
    """

    def __init__(
        self,
        base: Store,
        open_tx: Callable[[bool], Tx],
        savepoint: Callable[[], _Savepoint],
        clock: ManualClock,
    ) -> None:
        self.url = base.url
        self.dialect = base.dialect
        self.backend = base.backend  # the back-end's choices (`read_ahead`, `batch_gate`) are base's
        self.clock_source = base.clock_source
        self.writer_gate = False
        self.engine = base.engine
        self._local_writer = threading.Lock()
        self.retries = 0
        self._open_tx = open_tx
        self._savepoint = savepoint
        self._manual_clock = clock

    def write(self, fn: Callable[[Tx], T], gate: Gate | None = None) -> T:
        return self._atomic(fn, write=True)  # the one open transaction holds every gate

    def read(self, fn: Callable[[Tx], T], settled: bool = True, *, batched: bool = False) -> T:
        return self._atomic(fn, write=False)  # nothing here is ever fsynced apart, nor pipelined

    def project_of(self, kind: str, ident: str) -> str | None:
        return None  # no gate to choose: the one open transaction holds them all

    @contextmanager
    def branch(self) -> Iterator[None]:
        """Run a continuation, then undo it: the ledger and the clock as they were."""
        savepoint = self._savepoint()
        saved = self._manual_clock.t
        try:
            yield
        finally:
            savepoint.rollback()
            self._manual_clock.t = saved

    def _atomic(self, fn: Callable[[Tx], T], *, write: bool) -> T:
        savepoint = self._savepoint()
        try:
            result = fn(self._open_tx(write))
        except BaseException:
            savepoint.rollback()
            raise
        savepoint.commit()
        return result


@contextmanager
def open_branches(base: Store, clock: ManualClock) -> Iterator[BranchStore]:
    """A branch ledger over ``base`` (which must use ``clock``); everything is undone at the end."""
    with base.exclusive() as conn:
        store = BranchStore(base, lambda write: base.tx_on(conn, write=write), conn.begin_nested, clock)
        with store.branch():
            yield store
