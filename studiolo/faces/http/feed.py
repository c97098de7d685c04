"""One reader for the followed projects, however many event streams follow them (in one process).

`Feeds` polls `door.event_feed` for every followed project in one read while anyone follows
any, and each `ProjectFeed` keeps its project's recent events in a bounded buffer. A feed
covers the ledger up to `head`: every project event with `floor < seq <= head` is in the
buffer. A stream joins the feed *before* its own first
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
    """One followed project's recent events; filled by its process's `Feeds`."""

    def __init__(self, project_id: str, keep: int = _KEEP) -> None:
        self.project_id = project_id
        self.buffer: list[Event] = []  # ascending seq
        self.keep = keep
        self.floor = self.head = 0
        self.generation: tuple[str, str] = ("", "")
        self.followers = 0
        self.rendered: dict[int, str] = {}  # seq → its SSE text, for events shown unchanged
        self.begun = False
        self._ready = asyncio.Event()
        self._moved = asyncio.Event()

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

    def begin(self, head: int, generation: tuple[str, str]) -> None:
        """Cover the ledger from `head` on (a head already read: at most the ledger's now)."""
        self.floor = self.head = head
        self.generation = generation
        self.begun = True
        self._ready.set()

    def take(self, upto: int, generation: tuple[str, str], events: list[Event]) -> None:
        """This project's events of a batch that covered the ledger up to `upto`."""
        fresh = [e for e in events if e.seq > self.head]
        moved = bool(fresh) or generation != self.generation
        self.buffer.extend(fresh)
        if len(self.buffer) > self.keep:
            gone, self.buffer = self.buffer[: -self.keep], self.buffer[-self.keep :]
            self.floor = gone[-1].seq
            for e in gone:
                self.rendered.pop(e.seq, None)
        self.head = max(self.head, upto)
        self.generation = generation
        if moved:
            self._moved.set()
            self._moved = asyncio.Event()


class Feeds:
    """The feeds of one process (one event loop): one reader for every followed project.

    Each poll is one read (`door.event_feed`) of the new events of all the followed projects
    together, from the oldest head among them: a process's reads do not grow with the number
    of projects its streams follow. The reader runs while anyone follows anything; a feed is
    created on its first follower and dropped on its last."""

    def __init__(self, door: Coordinator, poll: float, keep: int = _KEEP) -> None:
        self.door, self.poll, self.keep = door, poll, keep
        self._feeds: dict[str, ProjectFeed] = {}
        self._task: asyncio.Task[None] | None = None
        self._last: FeedBatch | None = None  # the newest batch read (a new feed begins at it)

    def join(self, project_id: str) -> ProjectFeed:
        feed = self._feeds.get(project_id)
        if feed is None:
            feed = self._feeds[project_id] = ProjectFeed(project_id, self.keep)
            if self._last is not None:
                feed.begin(self._last.upto, self._last.generation)
            if self._task is None:
                self._task = asyncio.get_running_loop().create_task(self._run())
        feed.followers += 1
        return feed

    def leave(self, feed: ProjectFeed) -> None:
        feed.followers -= 1
        if feed.followers <= 0 and self._feeds.get(feed.project_id) is feed:
            del self._feeds[feed.project_id]
            if not self._feeds and self._task is not None:
                self._task.cancel()
                self._task, self._last = None, None  # the next follower starts from the head then

    def __len__(self) -> int:
        return len(self._feeds)

    async def _run(self) -> None:
        if self._last is None:  # the ledger's head now: where the first feeds begin
            self._last = await self._read(list(self._feeds), 2**62, 1)
        for feed in self._feeds.values():
            if not feed.begun:
                feed.begin(self._last.upto, self._last.generation)
        while True:
            await asyncio.sleep(self.poll)
            feeds = list(self._feeds.values())
            if not feeds:
                continue
            batch = await self._read([f.project_id for f in feeds], min(f.head for f in feeds), 1000)
            self._last = batch
            mine: dict[str | None, list[Event]] = {f.project_id: [] for f in feeds}
            for event in batch.events:
                mine.setdefault(event.project_id, []).append(event)
            for feed in feeds:  # a feed joined during the read begun before it: read next time
                feed.take(batch.upto, batch.generation, mine[feed.project_id])

    async def _read(self, project_ids: list[str], after: int, limit: int) -> FeedBatch:
        """One read; a failed one (the ledger briefly unavailable) is tried again next poll."""
        while True:
            try:
                return await run_in_threadpool(self.door.event_feed, project_ids, after, limit)
            except Exception:  # the streams wait; the next poll tries again
                await asyncio.sleep(self.poll)


def sse_of(feed: ProjectFeed, event: Event, render: Callable[[Event], str]) -> str:
    """The SSE text of an event, rendered once per feed when shown unchanged."""
    text = feed.rendered.get(event.seq)
    if text is None:
        text = render(event)
        if len(feed.rendered) < feed.keep * 2:
            feed.rendered[event.seq] = text
    return text
