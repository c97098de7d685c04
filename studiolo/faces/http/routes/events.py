"""The audit events of a project: a page, or a Server-Sent Events stream that follows it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from studiolo._exceptions import StudioloError
from studiolo.api import responses as s
from studiolo.core.model import Event, Principal
from studiolo.core.reasons import ErrorReason
from studiolo.faces.http.feed import Feeds, ProjectFeed, sse_of
from studiolo.faces.http.limits import StreamSlots
from studiolo.faces.http.operation import operation
from studiolo.faces.http.problems import problem_response
from studiolo.service import Coordinator, EventAccess

__all__: list[str] = []  # the functions are registered by name (`operation`)

Seq = Annotated[int, Field(ge=0, le=2**53, description="return events with seq > after")]
_KEEPALIVE_SECONDS = 15.0


@operation("events")
def list_events(
    project_id: str,
    caller: Principal,
    door: Coordinator,
    after: Seq = 0,
    limit: Annotated[int, Field(ge=1, le=1000)] = 200,
) -> list[s.EventOut]:
    return [s.EventOut.model_validate(e) for e in door.events(caller, project_id, after, limit)]


@operation("stream_events")
async def stream_events(
    project_id: str,
    request: Request,
    caller: Principal,
    token: str,
    door: Coordinator,
    after: Seq = 0,
    timeout: Annotated[float, Field(gt=0, le=86400, description="end the stream after this many s")] = 3600,
    last_event_id: Annotated[str | None, Field(max_length=20)] = None,
) -> Response:
    start = max(after, int(last_event_id) if last_event_id and last_event_id.isdigit() else 0)
    access = await run_in_threadpool(door.event_access, caller, project_id)  # 404 before streaming
    slots: StreamSlots = request.app.state.stream_slots
    if not slots.acquire(caller.id):
        detail = f"this principal already holds {slots.per_principal} open event streams"
        return problem_response(
            429, reason=ErrorReason.TOO_MANY_STREAMS, detail=detail, headers={"Retry-After": "5"}
        )
    feeds: Feeds = request.app.state.feeds
    feed = feeds.join(project_id)  # joined before the first read: that read covers its floor

    def release() -> None:
        slots.release(caller.id)
        feeds.leave(feed)

    follower = _Follower(door, token, feed, access, start)
    body = follower.follow(time.monotonic() + timeout)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return _SlotStream(body, release, media_type="text/event-stream", headers=headers)


class _SlotStream(StreamingResponse):
    """A stream that gives its principal's slot back however it ends (done, revoked, hung up)."""

    def __init__(self, body: AsyncIterator[str], release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(body, **kwargs)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


class _Follower:
    """One stream: its own read until it reaches the project's feed, then the feed's events
    through its own access, re-checked (token and grants) when the auth generation moves."""

    def __init__(
        self, door: Coordinator, token: str, feed: ProjectFeed, access: EventAccess, after: int
    ) -> None:
        self.door, self.token, self.feed, self.access = door, token, feed, access
        self.after = after
        self.checked = access.generation  # the feed generation the access was checked at

    async def follow(self, deadline: float) -> AsyncIterator[str]:
        yield ": studiolo events\n\n"
        await self.feed.ready()
        quiet_since = time.monotonic()
        while True:
            try:
                texts = await self._next()
            except StudioloError as exc:  # the token or the caller's grant was revoked mid-stream
                yield _sse("error", {**exc.to_dict(), "status": exc.status}, None)
                return
            for text in texts:
                yield text
            if texts:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > _KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                quiet_since = time.monotonic()
            now = time.monotonic()
            if now >= deadline:
                return
            if len(texts) < 1000:
                wait = min(deadline, quiet_since + _KEEPALIVE_SECONDS) - now
                await self.feed.moved(max(wait, 0.0))

    async def _next(self) -> list[str]:
        if self.feed.generation != self.checked:
            self.checked = self.feed.generation
            self.access = await run_in_threadpool(_recheck, self.door, self.token, self.feed.project_id)
        events = self.feed.since(self.after)
        if events is None:
            return await self._read_alone()
        shown = self.access.visible(events)
        if shown:
            self.after = shown[-1].seq
        return [
            sse_of(self.feed, e, _event_sse) if e is raw else _event_sse(e)
            for e, raw in zip(shown, events, strict=True)
        ]

    async def _read_alone(self) -> list[str]:
        """Behind the feed's buffer: one page through the door; caught up, the cursor moves to
        the floor (the page covered every event up to it: it began after the floor was set)."""
        floor = self.feed.floor
        page = await run_in_threadpool(
            self.door.events, self.access.caller, self.feed.project_id, self.after, 1000
        )
        if page:
            self.after = page[-1].seq
        if len(page) < 1000:
            self.after = max(self.after, floor)
        return [_event_sse(e) for e in page]


def _recheck(door: Coordinator, token: str, project_id: str) -> EventAccess:
    """The token authenticated again and the caller's read access checked again."""
    return door.event_access(door.authenticate(token), project_id)


def _event_sse(e: Event) -> str:
    return _sse(e.kind, s.EventOut.model_validate(e).model_dump(), str(e.seq))


def _sse(kind: str, data: dict[str, Any], seq: str | None) -> str:
    head = f"id: {seq}\n" if seq else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
