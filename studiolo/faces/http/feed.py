"""One reader per followed project, however many event streams follow it (in one process).

A `ProjectFeed` polls `door.event_feed` for its project while anyone follows it and keeps the
recent events in a bounded buffer. It covers the ledger up to `head`: every project event
with `floor < seq <= head` is in the buffer. A stream joins the feed *before* its own first
read (`door.events`), so that read covers everything up to `floor`; afterwards it takes
events from the buffer, each through its own `EventAccess`, and re-checks that access (its
token re-authenticated) whenever the feed's auth generation moves — a revoked token or grant
ends the stream within one poll, as when every stream polled on its own. A stream that falls
behind the buffer reads on its own (`door.events`) until it is back.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool

from studiolo.core.model import Event
from studiolo.service import Coordinator, FeedBatch

__all__ = ["Feeds", "ProjectFeed"]

_KEEP = 4096  # events kept per project


class ProjectFeed:
    def __init__(self, door: Coordinator, project_id: str, poll: float, keep: int = _KEEP) -> None:
        self.door, self.project_id, self.poll = door, project_id, poll
        self.buffer: list[Event] = []  # ascending seq
        self.keep = keep
        self.floor = self.head = 0
        self.generation: tuple[str, str] = ("", "")
        self.followers = 0
        self.rendered: dict[int, str] = {}  # seq → its SSE text, for events shown unchanged
        self._ready = asyncio.Event()
        self._moved = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def ready(self) -> None:
        await self._ready.wait()

    def since(self, cursor: int) -> list[Event] | None:
        """Events after `cursor`; None when the buffer no longer reaches back to it."""
        if cursor < self.floor:
            return None
        return self.buffer[bisect.bisect_right(self.buffer, cursor, key=lambda e: e.seq) :]

    async def moved(self, timeout: float) -> None:
        """Wait until the feed read something new (or `timeout`)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._moved.wait(), timeout)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        first = await self._read(2**62, 1)
        self.floor = self.head = first.upto
        self.generation = first.generation
        self._ready.set()
        while True:
            await asyncio.sleep(self.poll)
            self._take(await self._read(self.head, 1000))

    async def _read(self, after: int, limit: int) -> FeedBatch:
        """One read; a failed one (the ledger briefly unavailable) is tried again next poll."""
        while True:
            try:
                return await run_in_threadpool(self.door.event_feed, self.project_id, after, limit)
            except Exception:  # the streams wait; the next poll tries again
                await asyncio.sleep(self.poll)

    def _take(self, batch: FeedBatch) -> None:
        moved = bool(batch.events) or batch.generation != self.generation
        self.buffer.extend(batch.events)
        if len(self.buffer) > self.keep:
            gone, self.buffer = self.buffer[: -self.keep], self.buffer[-self.keep :]
            self.floor = gone[-1].seq
            for e in gone:
                self.rendered.pop(e.seq, None)
        self.head = max(self.head, batch.upto)
        self.generation = batch.generation
        if moved:
            self._moved.set()
            self._moved = asyncio.Event()


class Feeds:
    """The feeds of one process (one event loop), created on first follower, stopped on last."""

    def __init__(self, door: Coordinator, poll: float, keep: int = _KEEP) -> None:
        self.door, self.poll, self.keep = door, poll, keep
        self._feeds: dict[str, ProjectFeed] = {}

    def join(self, project_id: str) -> ProjectFeed:
        feed = self._feeds.get(project_id)
        if feed is None:
            feed = self._feeds[project_id] = ProjectFeed(self.door, project_id, self.poll, self.keep)
            feed.start()
        feed.followers += 1
        return feed

    def leave(self, feed: ProjectFeed) -> None:
        feed.followers -= 1
        if feed.followers <= 0 and self._feeds.get(feed.project_id) is feed:
            del self._feeds[feed.project_id]
            feed.stop()

    def __len__(self) -> int:
        return len(self._feeds)


def sse_of(feed: ProjectFeed, event: Event, render: Callable[[Event], str]) -> str:
    """The SSE text of an event, rendered once per feed when shown unchanged."""
    text = feed.rendered.get(event.seq)
    if text is None:
        text = render(event)
        if len(feed.rendered) < feed.keep * 2:
            feed.rendered[event.seq] = text
    return text
