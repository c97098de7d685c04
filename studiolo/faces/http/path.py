"""`OperationPath`: the one path every operation of the table takes.

    read the head → find the operation → authenticate once → read a bounded body
    → one threadpool call (parse, the door, render) → send

The operation is found by its method, its path's number of segments and first segment (a
dict lookup, then a few regular expressions), never by scanning the app's routes. The
caller is known before a byte of the body is read: a token the door has cached costs
nothing, another one threadpool call, and a request without a valid token gets its 401
with its body unread. The body is read up to the operation's cap (`Operation.cap`: 413
past it). Then one call in the threadpool parses the body and the query as the route's
models, calls the route's function (the door, and how its answer is rendered), and
serializes the response; heartbeats go to `LeaseLane` instead, which writes those queued
together in one transaction.

An `async def` function (a raw body, a stream, a remote call on the event loop) is awaited
on the event loop instead, handed the request (its body already read) and the token. A path
of the table asked with another method is answered 405 here. What is not the table's (the
mounted faces, a 404, a slash to redirect) goes on to the app, whose router ends with
`SlashRedirect`: a path of the table asked with a slash added or taken off is redirected to
it, as the router redirects to its own routes.
"""

from __future__ import annotations

import email.message
import inspect
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo._exceptions import InvalidRequest, PayloadTooLarge, StudioloError, Unauthenticated
from studiolo.api.operations import OPERATIONS, Operation
from studiolo.api.requests import invalid_request
from studiolo.core.model import Principal
from studiolo.faces.bearer import PRINCIPAL_KEY, bearer_token, leave_caller
from studiolo.faces.http.leases import LeaseLane
from studiolo.faces.http.operation import FUNCTIONS, parameters
from studiolo.faces.http.problems import error_response, problem_response, unexpected_response
from studiolo.faces.query import parse_query
from studiolo.observe.http import ROUTE_KEY
from studiolo.observe.metrics import Metrics
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = ["PRINCIPAL_KEY", "OperationPath", "SlashRedirect", "served"]


@dataclass(frozen=True)
class _Served:
    """An operation this path answers: its row, its function, and how to call it."""

    op: Operation
    pattern: re.Pattern[str]  # Starlette's, matched as its router matches (`match`, `$`)
    call: Callable[..., Any]
    names: frozenset[str]  # the function's parameters
    body: type[BaseModel] | None
    query: type[BaseModel] | None
    header: type[BaseModel] | None  # header parameters (`last_event_id`: `Last-Event-Id`)
    awaited: bool  # an `async def`: awaited on the event loop, not called in the threadpool
    output: TypeAdapter[Any] | None
    model: Any  # the response model (`list[M]` for a list)
    cap: int


@dataclass(frozen=True)
class _Asked:
    """What the path read of one request before it calls the operation's function."""

    values: dict[str, str]  # the path's parameters
    caller: Principal | None
    token: str | None
    headers: dict[bytes, bytes]
    body: bytes
    query: bytes


def served(settings: Settings) -> list[_Served]:
    """The table's operations, in its order (the first path that matches names the methods
    of a 405), each with its registered function."""
    found = []
    for op in OPERATIONS.values():
        call = FUNCTIONS[op.name]
        found.append(
            _Served(
                op,
                compile_path(op.path)[0],
                call,
                frozenset(inspect.signature(call).parameters),
                op.request_model(),
                *parameters(op.name),
                inspect.iscoroutinefunction(call),
                None if op.response_model() is None else TypeAdapter(op.response_model()),
                op.response_model(),
                int(min(getattr(settings, op.cap), settings.max_request_bytes)),
            )
        )
    return found


def _key(method: str, path: str) -> tuple[str, int, str]:
    parts = path.split("/")
    return method, len(parts), parts[1]


class OperationPath:
    """ASGI middleware: the operations of `served` answered here, anything else by `app`."""

    def __init__(
        self, app: ASGIApp, door: Coordinator, metrics: Metrics, settings: Settings, ops: Sequence[_Served]
    ) -> None:
        self.app, self.door, self.metrics, self.settings = app, door, metrics, settings
        self.lane = LeaseLane(door, window=settings.heartbeat_window_seconds, observed=metrics.heartbeats)
        self._index: dict[tuple[str, int, str], list[_Served]] = {}
        self._rest: list[_Served] = []  # `{path:path}` operations: any number of segments
        self._all = list(ops)
        for one in ops:
            if ":path}" in one.op.path:
                self._rest.append(one)
            else:
                self._index.setdefault(_key(one.op.method, one.op.template), []).append(one)

    def _find(self, method: str, path: str) -> tuple[_Served, dict[str, str]] | None:
        key = _key(method, path.removesuffix("\n"))  # a pattern's `$` matches before a last newline
        for one in (*self._index.get(key, ()), *self._rest):
            found = one.pattern.match(path) if one.op.method == method else None
            if found is not None:
                return one, found.groupdict()
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = _route_path(scope)
        found = self._find(scope["method"], path)
        if found is None:
            await self._not_found(path, scope, receive, send)
            return
        one, values = found
        scope[ROUTE_KEY] = one.op.template  # what the metrics, logs and spans name it
        response: Response
        try:
            response = await self._answer(one, values, scope, receive)
        except StudioloError as exc:
            response = error_response(exc)
        except Exception as exc:
            response = unexpected_response(exc)
        await response(scope, receive, send)

    async def _not_found(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        """405 for a path of the table asked with another method; anything else: the app's."""
        other = next((one for one in self._all if one.pattern.match(path)), None)
        if other is None:
            await self.app(scope, receive, send)
            return
        scope[ROUTE_KEY] = other.op.template
        allow = {"Allow": other.op.method}  # as Starlette answers: the first match's methods
        await problem_response(405, "method_not_allowed", "Method Not Allowed", headers=allow)(
            scope, receive, send
        )

    async def _answer(self, one: _Served, values: dict[str, str], scope: Scope, receive: Receive) -> Response:
        headers = dict(scope["headers"])
        caller: Principal | None = None
        token = bearer_token(scope)
        if one.op.auth == "bearer":
            caller = self.door.authenticate_cached(token) if token else None
            if caller is None:
                caller = await run_in_threadpool(self._authenticate, token)
            leave_caller(scope, caller)  # for the request's log line
        body = await _read_body(one.cap, headers, receive, read=one.op.body != "none")
        if one.op.name == "heartbeat" and caller is not None:
            parsed = _parse_body(one, headers, body)  # a bad body: the problem, before the lane
            lease = parsed.lease_seconds if parsed is not None else None  # type: ignore[attr-defined]
            return await self.lane.beat(caller, "", values["attempt_id"], lease)
        asked = _Asked(values, caller, token, headers, body, scope.get("query_string", b""))
        if one.awaited:
            kwargs = self._arguments(one, asked, None, Request(scope, _replay(body)))
            return _render(one, await one.call(**kwargs), None)
        return await run_in_threadpool(self._work, one, asked)

    def _authenticate(self, token: str | None) -> Principal:
        if not token:
            raise Unauthenticated("a bearer token is required")
        return self.door.authenticate(token)

    def _work(self, one: _Served, asked: _Asked) -> Response:
        """Parse, call the door through the route's function, render: one worker call."""
        try:
            given = _given() if "response" in one.names else None
            kwargs = self._arguments(one, asked, given, None)
            return _render(one, one.call(**kwargs), given)
        except StudioloError as exc:
            return error_response(exc)
        except Exception as exc:
            return unexpected_response(exc)

    def _arguments(
        self, one: _Served, asked: _Asked, given: Response | None, request: Request | None
    ) -> dict[str, Any]:
        """The function's arguments: path values, body, query, headers, what the path knows."""
        kwargs: dict[str, Any] = dict(asked.values)
        if one.body is not None:
            kwargs["body"] = _parse_body(one, asked.headers, asked.body)
        if one.query is not None:
            kwargs.update(parse_query(one.query, asked.query))
        if one.header is not None:
            kwargs.update(_parse_headers(one.header, asked.headers))
        injected = {
            "caller": asked.caller,
            "token": asked.token,
            "door": self.door,
            "metrics": self.metrics,
            "settings": self.settings,
            "response": given,
            "request": request,
        }
        kwargs.update({n: v for n, v in injected.items() if n in one.names})
        return kwargs


class SlashRedirect:
    """The router's last resort: a path of the table with a slash added or taken off is
    redirected (307) to it, as Starlette's router redirects to its own routes; else `default`."""

    def __init__(self, ops: Sequence[_Served], default: ASGIApp) -> None:
        self.patterns, self.default = [one.pattern for one in ops], default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = _route_path(scope) if scope["type"] == "http" else "/"
        if path != "/":
            other = dict(scope, path=scope["path"].rstrip("/") if path.endswith("/") else scope["path"] + "/")
            if any(pattern.match(_route_path(other)) for pattern in self.patterns):
                await RedirectResponse(str(URL(scope=other)))(scope, receive, send)
                return
        await self.default(scope, receive, send)


def _replay(body: bytes) -> Receive:
    """The request's body for a function that reads it from the request (already read here)."""
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        return messages.pop() if messages else {"type": "http.disconnect"}

    return receive


def _given() -> Response:
    """What a route may set (its `response` parameter): a status (a replay's 200), headers."""
    given = Response()
    given.status_code = None  # type: ignore[assignment]
    del given.headers["content-length"]
    return given


def _render(one: _Served, value: Any, given: Response | None) -> Response:
    if isinstance(value, Response):
        return value
    assert one.output is not None, one.op.name
    if type(value) is one.model:  # the route built the response model itself: dump it as is
        content = value.model_dump_json(by_alias=True).encode()
    else:
        content = one.output.dump_json(one.output.validate_python(value, from_attributes=True), by_alias=True)
    status = (given.status_code if given is not None else None) or one.op.status
    response = Response(content, status_code=status, media_type="application/json")
    if given is not None:
        response.headers.raw.extend(given.headers.raw)
    return response


def _parse_body(one: _Served, headers: dict[bytes, bytes], body: bytes) -> BaseModel | None:
    """The body as FastAPI read a route's body: JSON when the content type says so, else the
    bytes themselves (which no model accepts); empty: absent."""
    assert one.body is not None
    if not body:
        if one.op.body == "optional":
            return None
        raise _invalid([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    value: Any = body
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if content_type and _is_json(content_type):  # a strict content type: none is not JSON
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            error = {"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error"}
            raise _invalid([error]) from None
        except ValueError:  # not UTF-8 (nor -16 or -32): a plain 400
            raise InvalidRequest("There was an error parsing the body") from None
    if value is None and one.op.body == "optional":
        return None
    try:
        return one.body.model_validate(value, from_attributes=True)  # as FastAPI validated a body
    except ValidationError as exc:
        raise _invalid([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None


def _is_json(content_type: str) -> bool:
    """FastAPI's test (kept): `application/json` or `application/*+json`, parameters aside."""
    if content_type == "application/json":
        return True
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def _parse_headers(model: type[BaseModel], headers: dict[bytes, bytes]) -> dict[str, Any]:
    given = {
        n: headers[n.replace("_", "-").encode()]
        for n in model.model_fields
        if n.replace("_", "-").encode() in headers
    }
    try:
        parsed = model.model_validate({n: v.decode("latin-1") for n, v in given.items()})
    except ValidationError as exc:
        errors = [
            {**e, "loc": ("header", str(e["loc"][0]).replace("_", "-"), *e["loc"][1:])} for e in exc.errors()
        ]
        raise _invalid(errors) from None
    return dict(parsed)


def _invalid(errors: Sequence[Any]) -> StudioloError:
    return invalid_request(errors)


async def _read_body(cap: int, headers: dict[bytes, bytes], receive: Receive, *, read: bool) -> bytes:
    """The whole body, refused past `cap` bytes (declared or streamed) before more is read;
    an operation that takes no body leaves it unread."""
    declared = headers.get(b"content-length", b"0")
    if not declared.isdigit() or int(declared) > cap:
        raise _too_large(cap, declared.isdigit())
    if not read:
        return b""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise InvalidRequest("the client disconnected before its request was complete")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            raise _too_large(cap, True)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _too_large(cap: int, declared: bool) -> StudioloError:
    detail = f"the request body exceeds {cap} bytes for this route (or declares a bad Content-Length)"
    return PayloadTooLarge(detail) if declared else InvalidRequest(detail)


def _route_path(scope: Scope) -> str:
    """The path the app's routes see: without the `root_path` it is served under (as Starlette)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] == "/":
        return path[len(root) :]
    return path
