"""The route index (`dispatch.py`) picks the route FastAPI's scan picks and hands it the same
scope: every route of the app, with other methods, slashes added or taken off, unknown
segments, mounts; the same answer on the wire and the same scope at `APIRoute.handle`."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import fastapi.routing
import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from studiolo.faces.http.app import create_app
from studiolo.faces.http.dispatch import RouteIndex, install_route_index
from studiolo.settings import Settings
from tests.faces.helpers import issue_tokens
from tests.world import World

_SAMPLES = {"path": "a/b.txt", "int": "7", "float": "1.5", "uuid": "8c4f4d8e-1d8e-4b7a-9e0e-2b7f5b8f3b1a"}
_PARAM = re.compile(r"{([^}:]+)(?::([^}]+))?}")
_RANDOM = re.compile(rb"[A-Za-z0-9_-]{40,}|expires=[^;]*")
_METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS")


@pytest.fixture
def app(world: World) -> FastAPI:
    app = create_app(world.coord, Settings(database_url=world.coord.store.url))
    assert isinstance(app.router.middleware_stack, RouteIndex), "FastAPI lacks what the index mirrors"
    return app


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, ...]]]:
    """What every `APIRoute.handle` call saw: the route, endpoint, parameters, FastAPI's keys."""
    seen: list[tuple[Any, ...]] = []
    handle = APIRoute.handle

    async def recording(self: APIRoute, scope: dict[str, Any], receive: Any, send: Any) -> None:
        keys = {k: v if k == "form_limits" else id(v) for k, v in scope.get("fastapi", {}).items()}
        seen.append((id(self), scope["route"] is self, scope.get("endpoint"), scope.get("path_params"), keys))
        seen.append((id(scope.get("router")), scope["path"], scope.get("root_path")))
        await handle(self, scope, receive, send)

    monkeypatch.setattr(APIRoute, "handle", recording)
    yield seen


def _paths(app: FastAPI) -> list[str]:
    paths = {"/", "/nope", "/v1", "/v1/", "/v1/nope", "/a2a", "/a2a/", "/mcp/", "/ui", "/ui/static/app.css"}
    for context in iter_route_contexts(app.routes):
        path = context.path_format or context.path
        if not path:
            continue
        for one in (False, True):  # a `{path:path}` of one segment, then of two
            sample = _fill(context.path or path, one)
            base = sample.rstrip("/") or "/"
            paths.update({sample, base, base + "/", base + "/zz", sample.upper(), "//" + sample.lstrip("/")})
    return sorted(paths)


def _fill(path: str, one_segment: bool) -> str:
    """The path with a sample for each parameter (a `{path:path}` of one segment or two)."""
    return _PARAM.sub(lambda m: _sample(m.group(2), one_segment), path)


def _sample(convertor: str | None, one_segment: bool) -> str:
    if convertor == "path" and one_segment:
        return "b.txt"
    return _SAMPLES.get(convertor or "", "x1")


def _request(app: Any, method: str, path: str, token: str | None, root_path: str = "") -> tuple[Any, ...]:
    headers = [(b"host", b"studiolo.test")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": root_path + path,
        "raw_path": (root_path + path).encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("studiolo.test", 80),
        "state": {},
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def call() -> str:
        try:
            await app(scope, receive, send)
        except Exception as exc:  # the same failure either way (a mount not started, say)
            return repr(exc)
        return ""

    failure = asyncio.run(call())
    if path == "/metrics" and method == "GET":  # the counters count these very requests
        sent = [{**m, "body": b"", "headers": None} for m in sent]
    return failure, [
        (m["type"], m.get("status"), _masked(m.get("headers")), _masked(m.get("body"))) for m in sent
    ]


def _masked(value: Any) -> Any:
    """Without the dashboard's sign-in nonces and cookie expiry dates (fresh at every page),
    nor the request id (fresh at every request)."""
    if isinstance(value, bytes):
        return _RANDOM.sub(b"<random>", value)
    return None if value is None else [(k, b"<id>" if k == b"x-request-id" else _masked(v)) for k, v in value]


def _both(app: FastAPI, handled: list[tuple[Any, ...]], *args: Any, **kwargs: Any) -> None:
    index = app.router.middleware_stack
    assert isinstance(index, RouteIndex)
    handled.clear()
    indexed = _request(app, *args, **kwargs)
    via_index = list(handled)
    app.router.middleware_stack = app.router.app  # FastAPI's own scan
    try:
        handled.clear()
        scanned = _request(app, *args, **kwargs)
    finally:
        app.router.middleware_stack = index
    assert indexed == scanned, args
    assert via_index == handled, args


def test_every_request_gets_the_scans_route_and_answer(
    app: FastAPI, world: World, handled: list[tuple[Any, ...]]
) -> None:
    token = issue_tokens(world)["agent"]
    for path in _paths(app):
        for method in _METHODS:
            _both(app, handled, method, path, None)
            if method in ("GET", "HEAD"):
                _both(app, handled, method, path, token)
    _both(app, handled, "GET", "/v1/me", token, root_path="/behind")


def test_the_v1_routes_are_found_by_the_index(app: FastAPI, world: World) -> None:
    index = app.router.middleware_stack
    assert isinstance(index, RouteIndex)
    for context in iter_route_contexts(app.routes):
        path, methods = context.path or "", context.methods or set()
        if path.startswith("/v1/"):
            sample = _fill(path, True)
            for method in methods:
                scope = {"type": "http", "method": method, "path": sample, "root_path": ""}
                found = index.find(scope)
                assert found is not None, (method, path)
                assert found[1]["route"] is context.original_route


def test_routes_added_later_are_seen_in_the_apps_order(
    app: FastAPI, world: World, handled: list[tuple[Any, ...]]
) -> None:
    token = issue_tokens(world)["agent"]
    _both(app, handled, "GET", "/v1/me", token)  # the index is built
    first, second = APIRouter(prefix="/v2"), APIRouter(prefix="/v2")

    @first.get("/{x}/b")
    def first_wins(x: str) -> dict[str, str]:
        return {"first": x}

    @second.get("/a/{y}")
    def second_loses(y: str) -> dict[str, str]:
        return {"second": y}

    @second.get("/items/special")
    def special() -> dict[str, str]:
        return {"special": "yes"}

    @second.get("/items/{item}")
    def item(item: str) -> dict[str, str]:
        return {"item": item}

    app.include_router(first)
    app.include_router(second)

    @app.get("/v1/{anything}")
    def shadowed(anything: str) -> dict[str, str]:  # after /v1/me in the order: never reached for it
        return {"anything": anything}

    for path in ("/v1/me", "/v1/other", "/v2/a/b", "/v2/a/c", "/v2/items/special", "/v2/items/7"):
        _both(app, handled, "GET", path, token)
    assert _body(app, "/v2/a/b") == b'{"first":"a"}'
    assert _body(app, "/v2/items/special") == b'{"special":"yes"}'
    assert _body(app, "/v1/other") == b'{"anything":"other"}'
    index = app.router.middleware_stack
    assert isinstance(index, RouteIndex)
    assert index.find({"type": "http", "method": "GET", "path": "/v2/a/b", "root_path": ""}) is not None


def test_a_route_added_to_an_included_router_is_seen(app: FastAPI, handled: list[tuple[Any, ...]]) -> None:
    early, late = APIRouter(prefix="/v3"), APIRouter(prefix="/v3")

    @late.get("/{x}")
    def anything(x: str) -> dict[str, str]:
        return {"anything": x}

    app.include_router(early)
    app.include_router(late)
    assert _body(app, "/v3/late") == b'{"anything":"late"}'

    @early.get("/late")
    def added(x: str = "") -> dict[str, str]:  # included before `late`: it answers from now on
        return {"added": "yes"}

    assert _body(app, "/v3/late") == b'{"added":"yes"}'
    _both(app, handled, "GET", "/v3/late", None)


def _body(app: FastAPI, path: str) -> bytes:
    _, sent = _request(app, "GET", path, None)
    assert sent[0][1] == 200, sent
    body: bytes = sent[1][3]
    return body


def test_without_fastapis_internals_the_router_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    router = APIRouter()
    monkeypatch.delattr(fastapi.routing, "_IncludedRouter")
    assert not install_route_index(router)
    assert router.middleware_stack == router.app
