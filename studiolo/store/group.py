"""Group commit: the writers of one process share a transaction and its fsync.

A write is queued; whichever writer holds the leader lock takes every queued write (up to
`max_group`), runs each in its own savepoint of one `BEGIN IMMEDIATE` transaction, one after
another in queue order, and commits once. A write that raises is rolled back to its
savepoint and only it fails; the others commit. Each caller gets its own result or error
only after the group's COMMIT returned, so nothing is reported before it is durable. If the
COMMIT (or the BEGIN) fails, every write of the group fails with that error and was not
applied. The history is the same as running the writes one by one in queue order: each sees
the effects of those before it, and the group is all-or-nothing at the end.

Waiting is blocking (a lock, then the cross-process writer lock): nobody polls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["GroupCommit", "Job", "Volatile", "volatile"]


class Volatile(Generic[T]):
    """A write function marked as safe to lose in a crash (a lease extension): on SQLite its
    group commits without an fsync of its own if every write in it is volatile."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], T]) -> None:
        self.fn = fn

    def __call__(self, tx: Any) -> T:
        return self.fn(tx)


def volatile(fn: Callable[[Any], T]) -> Volatile[T]:
    return Volatile(fn)


class Job(Generic[T]):
    """One queued write and, once its group committed, its outcome."""

    __slots__ = ("done", "durable", "error", "fn", "result")

    def __init__(self, fn: Callable[[Any], T], durable: bool) -> None:
        self.fn = fn
        self.durable = durable
        self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None


class GroupCommit:
    """The queue and the leader lock; `commit_group(jobs)` runs a group and fills in outcomes."""

    def __init__(
        self, commit_group: Callable[[list[Job[Any]]], None], leader: threading.Lock, max_group: int = 64
    ) -> None:
        self._commit_group = commit_group
        self._leader = leader
        self._max = max_group
        self._mutex = threading.Lock()
        self._pending: list[Job[Any]] = []
        self.groups = 0  # groups committed (for metrics and tests)
        self.grouped = 0  # writes that shared their group with another

    def submit(self, fn: Callable[[Any], T]) -> T:
        job: Job[T] = Job(fn, not isinstance(fn, Volatile))
        with self._mutex:
            self._pending.append(job)
        while not job.done:
            with self._leader:
                if not job.done:
                    self._lead()
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def _lead(self) -> None:
        with self._mutex:
            batch, self._pending = self._pending[: self._max], self._pending[self._max :]
        if not batch:
            return
        try:
            self._commit_group(batch)
        except BaseException as exc:  # the group did not commit: none of it happened
            for job in batch:
                job.result, job.error = None, exc
            if not isinstance(exc, Exception):
                raise
        else:
            self.groups += 1
            self.grouped += len(batch) if len(batch) > 1 else 0
        finally:
            for job in batch:
                job.done = True
