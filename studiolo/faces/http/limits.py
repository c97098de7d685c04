"""Request-size limit: a pure ASGI middleware that answers 413 `payload_too_large`."""

from __future__ import annotations

import contextlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo.faces.http.problems import problem_response

__all__ = ["BodyLimit"]


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuse bodies above `max_bytes`, whether declared (Content-Length) or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        seen = 0
        exceeded = False

        async def limited() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    exceeded = True
                    raise _TooLarge
            return message

        async def guarded(message: Message) -> None:
            if not exceeded:
                await send(message)

        with contextlib.suppress(_TooLarge):
            await self.app(scope, limited, guarded)
        if exceeded:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"the request body exceeds {self.max_bytes} bytes (or declares a bad Content-Length)"
        status = 413 if dict(scope["headers"]).get(b"content-length", b"0").isdigit() else 400
        reason = "payload_too_large" if status == 413 else "invalid_request"
        await problem_response(status, reason, detail)(scope, receive, send)
