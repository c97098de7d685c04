"""The fast lane of the hottest route: a fleet's heartbeats, answered without FastAPI's
routing and dependency machinery — one threadpool hop for the token and the door, the same
request and response models, the same answers.

Only a well-formed request takes it: `POST /v1/attempts/{attempt_id}/heartbeat` with a bearer
token and a body that is empty or a valid `LeaseIn` in `application/json`. Anything else (no
token, a body that does not parse or validate, another content type) goes on to the FastAPI
route with the body it carried, so odd requests get exactly the usual answers. An error of
the door is rendered by the app's own error functions. It sits inside the limits, the
metrics and authenticate-first, like the routes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo._exceptions import StudioloError
from studiolo.api import responses as s
from studiolo.api.requests import LeaseIn
from studiolo.core.model import Principal
from studiolo.faces.http.problems import error_response, unexpected_response
from studiolo.service import Coordinator

__all__ = ["HotRoutes"]

_HEARTBEAT = re.compile(r"/v1/attempts/([^/]+)/heartbeat")
_NOT_FAST = object()
_SMALL = 4096  # a heartbeat's body is a few bytes; anything larger goes to the route


class HotRoutes:
    def __init__(self, app: ASGIApp, door: Coordinator, principal_key: str) -> None:
        self.app, self.door, self._principal_key = app, door, principal_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _HEARTBEAT.fullmatch(scope["path"]) if scope["type"] == "http" else None
        if match is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        messages, body = await _small_body(receive)
        lease = _lease(headers, body) if body is not None else _NOT_FAST
        token = _bearer(headers)
        if lease is _NOT_FAST or token is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        known = scope.get("state", {}).get(self._principal_key)
        principal = known if isinstance(known, Principal) else None
        response = await run_in_threadpool(self._heartbeat, principal, token, match.group(1), lease)
        await response(scope, receive, send)

    def _heartbeat(self, principal: Principal | None, token: str, attempt_id: str, lease: Any) -> Response:
        try:
            caller = principal or self.door.authenticate(token)
            attempt = self.door.heartbeat(caller, attempt_id, lease)
            out = s.AttemptOut.model_validate(attempt).model_dump(mode="json")
        except StudioloError as exc:
            return error_response(exc)
        except Exception as exc:  # what the app's last-resort handler does
            return unexpected_response(exc)
        return JSONResponse(out)


async def _small_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages read, and the whole body if it is small (else None: the route reads on)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        size += len(message.get("body", b""))
        if size > _SMALL:
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)


def _lease(headers: dict[bytes, bytes], body: bytes) -> Any:
    """The requested lease seconds (None: the default), or _NOT_FAST."""
    if not body:
        return None
    if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/json":
        return _NOT_FAST
    try:
        return LeaseIn.model_validate(json.loads(body)).lease_seconds
    except (ValueError, ValidationError, TypeError, StudioloError):
        return _NOT_FAST


def _bearer(headers: dict[bytes, bytes]) -> str | None:
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` with the messages read so far given back, for the route the request goes on to."""
    pending = list(reversed(messages))

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again
