"""The peer a user would pick to "mark it done": the official a2a-sdk `DatabaseTaskStore.save`
of a WORKING task as COMPLETED with one artifact, on SQLite (aiosqlite) in WAL mode with
`synchronous=FULL`, like Studiolo's ledger. Each save is timed inside the event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore
from a2a.types.a2a_pb2 import Artifact, Part, Task, TaskState, TaskStatus
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

__all__ = ["PeerStore"]


def _pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=FULL"):
        cur.execute(f"PRAGMA {pragma}")
    cur.close()


def _task(i: int, state: int, artifact: bool) -> Task:
    task = Task(id=f"task-{i}", context_id=f"ctx-{i}", status=TaskStatus(state=state))  # type: ignore[arg-type]
    task.status.timestamp.GetCurrentTime()
    if artifact:
        task.artifacts.append(Artifact(artifact_id=f"out-{i}", name="out.txt", parts=[Part(text="42\n")]))
    return task


class PeerStore:
    """`n` tasks saved WORKING up front; `calls()` completes them one save each, and
    `concurrent_calls(k, m)` completes them in blocks of `k` clients doing `m` saves each."""

    def __init__(self, path: Path, n: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.engine: AsyncEngine = create_async_engine(f"sqlite+aiosqlite:///{path}")
        event.listen(self.engine.sync_engine, "connect", _pragmas)
        self.store = DatabaseTaskStore(self.engine)
        self.context = ServerCallContext()
        self.n = n
        self.loop.run_until_complete(self._working())

    async def _working(self) -> None:
        for i in range(self.n):
            await self.store.save(_task(i, TaskState.TASK_STATE_WORKING, False), self.context)

    async def _complete(self, i: int) -> float:
        t0 = time.perf_counter()
        await self.store.save(_task(i, TaskState.TASK_STATE_COMPLETED, True), self.context)
        return time.perf_counter() - t0

    def calls(self) -> list[Callable[[], float]]:
        def call(i: int) -> Callable[[], float]:
            return lambda: self.loop.run_until_complete(self._complete(i))

        return [call(i) for i in range(self.n)]

    async def _client(self, ids: range) -> None:
        for i in ids:
            await self.store.save(_task(i, TaskState.TASK_STATE_COMPLETED, True), self.context)

    async def _block(self, start: int, k: int, m: int) -> float:
        """`k` concurrent clients on the one store (asyncio.gather), `m` saves one after
        another each; the block's wall-clock time."""
        t0 = time.perf_counter()
        await asyncio.gather(*(self._client(range(start + c * m, start + (c + 1) * m)) for c in range(k)))
        return time.perf_counter() - t0

    def concurrent_calls(self, k: int, m: int) -> list[Callable[[], float]]:
        def call(start: int) -> Callable[[], float]:
            return lambda: self.loop.run_until_complete(self._block(start, k, m))

        return [call(start) for start in range(0, self.n - k * m + 1, k * m)]

    def close(self) -> None:
        self.loop.run_until_complete(self.engine.dispose())
        self.loop.close()
