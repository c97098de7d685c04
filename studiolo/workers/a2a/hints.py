"""Stream events as hints, never as facts: while a remote task works, any event of its stream
(`SubscribeToTask`) wakes the requester's next `GetTask` early. Many events before that read
are one wake (an `asyncio.Event`: deduplicated by construction); nothing an event says is
used — the poll decides. A remote without streaming, a refused or broken subscription: the
requester just polls at its interval."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any, cast

from a2a.client.client import Client as A2AClient
from a2a.types.a2a_pb2 import SubscribeToTaskRequest

__all__ = ["Hints"]

log = logging.getLogger("studiolo.a2a.requester")


class Hints:
    def __init__(self, client: A2AClient | None) -> None:
        self._client = client  # a streaming client, or None when the remote does not stream
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self.received = 0  # events seen (each at most one early read)

    def follow(self, remote_task_id: str) -> None:
        """Subscribe once to the remote task's stream (a no-op without streaming)."""
        if self._client is not None and self._task is None:
            self._task = asyncio.create_task(self._run(remote_task_id))

    async def _run(self, remote_task_id: str) -> None:
        assert self._client is not None
        try:
            # `subscribe` is an async generator (typed as an iterator): closed on the way out.
            stream = cast(
                AsyncGenerator[Any, None], self._client.subscribe(SubscribeToTaskRequest(id=remote_task_id))
            )
            async with contextlib.aclosing(stream) as events:
                async for _ in events:
                    self.received += 1
                    self._wake.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # refused, unsupported or broken: polling goes on
            log.debug("no stream hints for %s: %s", remote_task_id, exc)

    async def wait(self, seconds: float, stopping: asyncio.Event) -> None:
        """Until a hint, a stop, or `seconds`; then the hint is spent."""
        waits = [asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(stopping.wait())]
        _, pending = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        for w in pending:
            w.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self._wake.clear()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._client is not None:
            await self._client.close()
