"""The audit events of a project: a page, or a Server-Sent Events stream that follows it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from studiolo._exceptions import StudioloError
from studiolo.api import responses as s
from studiolo.core.model import Event
from studiolo.faces.http.deps import BearerToken, Caller, Door
from studiolo.faces.http.limits import StreamSlots
from studiolo.faces.http.problems import problem_response
from studiolo.service import Coordinator

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["events"])

Seq = Annotated[int, Query(ge=0, le=2**53, description="return events with seq > after")]
_KEEPALIVE_SECONDS = 15.0


@router.get("/projects/{project_id}/events", summary="A page of the project's audit events")
def list_events(
    project_id: str,
    caller: Caller,
    door: Door,
    after: Seq = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> list[s.EventOut]:
    return [s.EventOut.model_validate(e) for e in door.events(caller, project_id, after, limit)]


@router.get(
    "/projects/{project_id}/events/stream",
    summary="Follow the project's events as Server-Sent Events (`id` = seq; honours Last-Event-ID)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}},
)
async def stream_events(
    project_id: str,
    request: Request,
    caller: Caller,
    token: BearerToken,
    door: Door,
    after: Seq = 0,
    timeout: Annotated[float, Query(gt=0, le=86400, description="end the stream after this many s")] = 3600,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
) -> Response:
    start = max(after, int(last_event_id) if last_event_id and last_event_id.isdigit() else 0)
    first = await run_in_threadpool(door.events, caller, project_id, start, 1000)  # 404 before streaming
    slots: StreamSlots = request.app.state.stream_slots
    if not slots.acquire(caller.id):
        detail = f"this principal already holds {slots.per_principal} open event streams"
        return problem_response(429, reason="too_many_streams", detail=detail, headers={"Retry-After": "5"})
    poll: float = request.app.state.event_poll_seconds
    body = _follow(door, token, project_id, first, start, poll, time.monotonic() + timeout)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return _SlotStream(
        body, lambda: slots.release(caller.id), media_type="text/event-stream", headers=headers
    )


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


async def _follow(
    door: Coordinator,
    token: str,
    project_id: str,
    batch: list[Event],
    after: int,
    poll: float,
    deadline: float,
) -> AsyncIterator[str]:
    yield ": studiolo events\n\n"
    quiet_since = time.monotonic()
    while True:
        for e in batch:
            yield _sse(e.kind, s.EventOut.model_validate(e).model_dump(), str(e.seq))
            after = e.seq
        if batch:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > _KEEPALIVE_SECONDS:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
        if time.monotonic() >= deadline:
            return
        await anyio.sleep(poll if len(batch) < 1000 else 0)
        try:
            batch = await run_in_threadpool(_next, door, token, project_id, after)
        except StudioloError as exc:  # the token or the caller's grant was revoked mid-stream
            yield _sse("error", {**exc.to_dict(), "status": exc.status}, None)
            return


def _next(door: Coordinator, token: str, project_id: str, after: int) -> list[Event]:
    """Each poll re-authenticates the token: a revoked token or grant ends the stream."""
    return door.events(door.authenticate(token), project_id, after, 1000)


def _sse(kind: str, data: dict[str, Any], seq: str | None) -> str:
    head = f"id: {seq}\n" if seq else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
