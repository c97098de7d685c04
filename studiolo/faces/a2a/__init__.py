"""The A2A face (docs/a2a.md): the signed Agent Card, JSON-RPC and HTTP+JSON bindings through
the a2a-sdk route builders, the ledger as the SDK's task store, and an executor that only
restates the ledger. `mount_a2a` adds it to the HTTP face's app."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
from a2a.server.agent_execution import RequestContext
from a2a.server.agent_execution.active_task import ActiveTask
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.types.a2a_pb2 import AgentCard, CancelTaskRequest, SubscribeToTaskRequest, Task, TaskState
from a2a.utils.errors import ExtensionSupportRequiredError, TaskNotCancelableError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo._exceptions import StudioloError
from studiolo.core.remote import MANIFEST_EXTENSION
from studiolo.faces.a2a.admin import admin_routes
from studiolo.faces.a2a.card import build_card, sign_card
from studiolo.faces.a2a.executor import TERMINAL, LedgerExecutor
from studiolo.faces.a2a.ledger import LedgerTaskStore, PrincipalUser, Renderer
from studiolo.faces.bearer import bearer_token
from studiolo.service import Coordinator

__all__ = ["mount_a2a"]

INLINE_MAX = 256 * 1024  # files larger than this are URL parts served by Studiolo
# The card changes when an intake template does: a minute of caching, then a revalidation
# against the ETag (one 304). TCK CARD-CACHE-001 (SHOULD).
CARD_CACHE_CONTROL = "public, max-age=60"
_PRINCIPAL = "studiolo.principal"


def mount_a2a(
    app: Starlette,
    door: Coordinator,
    base_url: str,
    *,
    poll_seconds: float = 0.5,
    inline_max: int = INLINE_MAX,
) -> None:
    """The card at /.well-known/agent-card.json; the bindings under /a2a (bearer tokens)."""
    base_url = base_url.rstrip("/")
    renderer = Renderer(door, base_url, inline_max)

    async def current_card(_static: AgentCard) -> AgentCard:
        templates = await run_in_threadpool(door.delegable_intakes)
        key = await run_in_threadpool(door.signing_key)
        return sign_card(build_card(base_url, templates), key)

    static = build_card(base_url, [])
    handler = _Handler(LedgerExecutor(renderer, poll_seconds), LedgerTaskStore(renderer), static)
    builder = _ContextBuilder()
    routes: list[Any] = [Route("/tasks/{task_id}/files/{path:path}", _files(renderer), methods=["GET"])]
    routes += admin_routes(door)
    # the card's URL, and the same with a trailing slash: a client joining "/" to the
    # interface URL (the A2A TCK's does) would otherwise get a redirect it does not follow
    for path in ("/jsonrpc", "/jsonrpc/"):
        routes += create_jsonrpc_routes(handler, path, context_builder=builder)
    routes += create_rest_routes(handler, context_builder=builder, path_prefix="/rest")
    app.mount("/a2a", _BearerGate(_JsonRpcContentType(Starlette(routes=routes)), door))
    app.router.routes.extend(
        create_agent_card_routes(static, card_modifier=current_card, cache_control=CARD_CACHE_CONTROL)
    )
    logging.getLogger("a2a.server.agent_execution.active_task").addFilter(_ledger_first)


class _Handler(DefaultRequestHandler):
    """The SDK's handler, plus three rules: a requester must speak the manifest extension; a
    cancel answers CANCELED or TaskNotCancelable — never the winner's task; and a resubscribe
    to a live task that no executor follows here (the service restarted) starts a follower."""

    async def on_message_send(self, params: Any, context: ServerCallContext) -> Any:
        _require_extension(context)
        return await super().on_message_send(params, context)

    async def on_message_send_stream(self, params: Any, context: ServerCallContext) -> Any:
        _require_extension(context)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest, context: ServerCallContext) -> Any:
        follower = await self._follower(params.id, context)
        if follower is None:
            async for event in super().on_subscribe_to_task(params, context):
                yield event
            return
        active, request = follower  # tap first, then start following: no event is missed
        async for event in active.subscribe(request=request, include_initial_task=True):
            yield event

    async def _follower(
        self, task_id: str, context: ServerCallContext
    ) -> tuple[ActiveTask, RequestContext] | None:
        """A new executor run for a live delegation nobody follows; None when one does (or the
        task is unknown or terminal: the SDK answers those)."""
        if self._event_stream is not None or await self._active_task_registry.get(task_id) is not None:
            return None
        task = await self.task_store.get(task_id, context)
        if not isinstance(task, Task) or task.status.state in TERMINAL:
            return None
        registry = self._active_task_registry
        active = await registry.get_or_create(task_id, call_context=context, context_id=task.context_id)
        return active, RequestContext(context, task_id=task_id, context_id=task.context_id, task=task)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        task: Task | None = await super().on_cancel_task(params, context)
        if task is None or task.status.state != TaskState.TASK_STATE_CANCELED:
            raise TaskNotCancelableError(message="an accepted completion committed first")
        return task


def _require_extension(context: ServerCallContext) -> None:
    if MANIFEST_EXTENSION not in context.requested_extensions:
        raise ExtensionSupportRequiredError(message=f"send A2A-Extensions: {MANIFEST_EXTENSION}")


class _ContextBuilder(DefaultServerCallContextBuilder):
    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.user = PrincipalUser(request.scope[_PRINCIPAL])
        return context


class _BearerGate:
    """401 before any A2A handler runs unless the bearer token names a principal; and while a
    response is open (a stream), the token is checked again every `recheck` seconds: once it
    is revoked the response ends, as the API's event stream does."""

    def __init__(self, app: ASGIApp, door: Coordinator, recheck: float = 0.5) -> None:
        self._app = app
        self._door = door
        self._recheck = recheck

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        token = bearer_token(scope)
        try:
            if token is None:
                raise LookupError
            scope[_PRINCIPAL] = await run_in_threadpool(self._door.authenticate, token)
        except (LookupError, StudioloError):
            await _unauthenticated(scope, receive, send)
            return
        await self._while_valid(token, scope, receive, send)

    async def _while_valid(self, token: str, scope: Scope, receive: Receive, send: Send) -> None:
        started = ended = revoked = False

        async def sending(message: Message) -> None:
            nonlocal started, ended
            started = True
            ended = message["type"] == "http.response.body" and not message.get("more_body", False)
            await send(message)

        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal revoked
                while True:
                    await anyio.sleep(self._recheck)
                    try:
                        await run_in_threadpool(self._door.authenticate, token)
                    except StudioloError:
                        revoked = True
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            await self._app(scope, receive, sending)
            tg.cancel_scope.cancel()
        if revoked and not started:
            await _unauthenticated(scope, receive, send)
        elif revoked and not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class _JsonRpcContentType:
    """A JSON-RPC request whose Content-Type is not JSON is answered with the binding's
    `ContentTypeNotSupportedError` (-32005), not parsed anyway (TCK JSONRPC-SSE-002, MUST).
    A request without a Content-Type is left to the SDK."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"].rstrip("/").endswith("/jsonrpc")
        ):
            kind = (
                dict(scope["headers"])
                .get(b"content-type", b"")
                .decode("latin-1")
                .split(";")[0]
                .strip()
                .lower()
            )
            if kind and not (kind == "application/json" or kind.endswith("+json")):
                error = {
                    "code": -32005,
                    "message": f"Content-Type {kind!r} is not supported: send application/json",
                }
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
                await Response(body, media_type="application/json")(scope, receive, send)
                return
        await self._app(scope, receive, send)


async def _unauthenticated(scope: Scope, receive: Receive, send: Send) -> None:
    body = b'{"reason":"unauthenticated","detail":"a bearer token is required"}'
    headers = {"WWW-Authenticate": "Bearer", "Content-Type": "application/json"}
    await Response(body, status_code=401, headers=headers)(scope, receive, send)


def _files(renderer: Renderer) -> Any:
    async def serve(request: Request) -> Response:
        """A published file of a COMPLETED delegated task (the URL parts of large files)."""
        caller = request.scope[_PRINCIPAL]
        task_id, path = request.path_params["task_id"], request.path_params["path"]
        try:
            view = await run_in_threadpool(renderer.door.delegated, caller, task_id)
        except StudioloError:
            return Response(status_code=404)
        for f in view.files if renderer(view).state == TaskState.TASK_STATE_COMPLETED else ():
            if f.path == path:
                headers = {"ETag": f'"{f.digest}"'}
                return Response(f.data, media_type="application/octet-stream", headers=headers)
        return Response(status_code=404)

    return serve


def _ledger_first(record: logging.LogRecord) -> bool:
    """The ledger holds a delegated task before the SDK sees its first event, so the SDK's
    "already exists, ignoring task replacement" is expected here: drop only that line."""
    return "already exists. Ignoring task replacement" not in str(record.msg)
