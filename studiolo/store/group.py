"""Group commit: the writers of one process share a transaction and its fsync.

A write is queued; whichever writer holds the leader lock takes every queued write (up to
`max_group`), runs each in its own savepoint of one `BEGIN IMMEDIATE` transaction, one after
another in queue order, and commits once. A write that raises is rolled back to its
savepoint and only it fails; the others commit. If the COMMIT (or the BEGIN) fails, every
write of the group fails with that error and was not applied. The history is the same as
running the writes one by one in queue order: each sees the effects of those before it, and
the group is all-or-nothing at the end.

Committing and making durable are two steps. `commit_group(jobs)` commits under the leader
lock and returns what is left to make the group durable (the WAL's fsync on SQLite, see
`sqlite.py`), or None. The leader releases the leader lock first, so the next group commits
while this one waits for its disk, then runs that step, and only then answers the group's
durable writes: nothing durable is reported before it is durable. If that step fails, every
durable write of the group fails with its error (applied, but not known to be durable).
Volatile writes (`volatile(fn)`: safe to lose in a crash) are answered as soon as their
group committed.

Readers do not answer from what is not yet durable either: `barrier()` waits until every
group this process had taken when it was called is durable (or failed). A group counts from
before its COMMIT, so a read that could have seen a group's writes and then calls `barrier()`
waits for that group's fsync (`Store.read` does). This holds within one process; with
`serve --workers N`, a read may see another process's group during its fsync.

Waiting is blocking (a lock, the cross-process writer lock, an event): nobody polls.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["GroupCommit", "Job", "Settle", "Volatile", "volatile"]

Settle = Callable[[], None]  # makes a committed group durable (an fsync)


class Volatile(Generic[T]):
    """A write function marked as safe to lose in a crash (a lease extension): on SQLite its
    group commits without an fsync of its own if every write in it is volatile, and it is
    answered without waiting for the fsync of a durable group it shares."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], T]) -> None:
        self.fn = fn

    def __call__(self, tx: Any) -> T:
        return self.fn(tx)


def volatile(fn: Callable[[Any], T]) -> Volatile[T]:
    return Volatile(fn)


class _Group:
    """The two moments a group's callers wait for: committed, then durable."""

    __slots__ = ("committed", "durable")

    def __init__(self) -> None:
        self.committed = threading.Event()
        self.durable = threading.Event()


class Job(Generic[T]):
    """One queued write and, once its group committed (and, if durable, was synced), its
    outcome."""

    __slots__ = ("context", "durable", "error", "fn", "group", "queued", "result")

    def __init__(self, fn: Callable[[Any], T], durable: bool) -> None:
        self.fn = fn
        self.durable = durable
        self.context = contextvars.copy_context()  # the submitter's (a request id): the leader runs it in it
        self.queued = time.perf_counter()
        self.group: _Group | None = None  # set when a leader takes it
        self.result: T | None = None
        self.error: BaseException | None = None

    def run(self, tx: Any) -> T:
        """`fn(tx)`, in the context of the thread that submitted it."""
        return self.context.run(self.fn, tx)

    def wait(self) -> None:
        assert self.group is not None
        (self.group.durable if self.durable else self.group.committed).wait()


class GroupCommit:
    """The queue and the leader lock; `commit_group(jobs)` runs a group, fills in outcomes
    and returns the step that makes it durable (None: nothing to wait for)."""

    def __init__(
        self,
        commit_group: Callable[[list[Job[Any]]], Settle | None],
        leader: threading.Lock,
        max_group: int = 64,
    ) -> None:
        self._commit_group = commit_group
        self._leader = leader
        self._max = max_group
        self.observed: Callable[[int, float], None] = _unobserved  # (size, oldest's wait) per group
        self._mutex = threading.Lock()
        self._pending: list[Job[Any]] = []
        self._unsettled: set[_Group] = set()  # taken, not yet durable (or failed)
        self.groups = 0  # groups committed (for metrics and tests)
        self.grouped = 0  # writes that shared their group with another

    def submit(self, fn: Callable[[Any], T]) -> T:
        job: Job[T] = Job(fn, not isinstance(fn, Volatile))
        with self._mutex:
            self._pending.append(job)
        while job.group is None:
            with self._leader:
                if job.group is not None:  # another leader took it
                    break
                led = self._lead()
            if led is not None:  # outside the leader lock: the next group may commit
                self._settle(*led)
        job.wait()
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def _lead(self) -> tuple[list[Job[Any]], _Group, Settle] | None:
        """Take and commit a group; return it if it still has to be made durable."""
        group = _Group()
        with self._mutex:
            batch, self._pending = self._pending[: self._max], self._pending[self._max :]
            for job in batch:
                job.group = group
            if batch:
                self._unsettled.add(group)
        if not batch:
            return None
        self.observed(len(batch), time.perf_counter() - batch[0].queued)
        try:
            settle = self._commit_group(batch)
        except BaseException as exc:  # the group did not commit: none of it happened
            for job in batch:
                job.result, job.error = None, exc
            group.committed.set()
            self._durable(group)
            if not isinstance(exc, Exception):
                raise
            return None
        self.groups += 1
        self.grouped += len(batch) if len(batch) > 1 else 0
        group.committed.set()
        if settle is None:
            self._durable(group)
            return None
        return batch, group, settle

    def barrier(self) -> None:
        """Wait until every group taken so far is durable (or failed)."""
        with self._mutex:
            waiting = list(self._unsettled)
        for group in waiting:
            group.durable.wait()

    def _durable(self, group: _Group) -> None:
        with self._mutex:
            self._unsettled.discard(group)
        group.durable.set()

    def _settle(self, batch: list[Job[Any]], group: _Group, settle: Settle) -> None:
        try:
            settle()
        except BaseException as exc:  # applied, but not known to be durable: say so
            for job in batch:
                if job.durable:
                    job.result, job.error = None, exc
            if not isinstance(exc, Exception):
                raise
        finally:
            self._durable(group)


def _unobserved(size: int, waited: float) -> None:
    pass
