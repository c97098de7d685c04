"""`RouteIndex`: finds the route of an HTTP request among the few that could match it, not by
scanning every route of the app, and hands it the request exactly as FastAPI's router would.

FastAPI (0.165) keeps each `include_router` as one `_IncludedRouter` entry. The app's router
asks each entry in turn whether it matches, and an entry answers by trying every route it
holds; the entry that matches then *tries them all again* to find which one (`matches` keeps
only the verdict, `handle` calls `_match` a second time). No app setting avoids it: every
`include_router` makes such an entry. A `/v1/tasks/{id}/complete` was about 50 route tests.

The index keys every route by its path's number of segments, its first segment and its last
segment ("any" when the last is a parameter), when the first is fixed text and every parameter
fits in one segment (`str`, `int`, `float`, `uuid`): such a route can match no path with
another key. Every other route (mounts, `{path:path}`, hosts, route groups) is kept with every
key of its fixed first segment that has at least its number of "/" (or with every key if it has
no fixed first segment). For a path with a known key the index tries that key's routes in the
app's order; the first full match, if it is a FastAPI route included once, is handled as the
router's scan and the including router's `_handle_selected` would (the same scope keys, form
limits, telemetry route, then `APIRoute.handle`). Anything else — no key, no full match (405,
the slash redirects, 404), a mount, a route of another kind — goes to the router itself, as
before. The index is rebuilt when the app's routes change: FastAPI's routes version of any
router in the app (what `include_router` and `add_api_route` move) or its number of routes
(`mount` moves only that).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from fastapi import routing as fr
from fastapi.routing import APIRoute, APIRouter, APIWebSocketRoute
from starlette import routing
from starlette._utils import get_route_path
from starlette.convertors import FloatConvertor, IntegerConvertor, StringConvertor, UUIDConvertor
from starlette.routing import Match
from starlette.types import Receive, Scope, Send

__all__ = ["RouteIndex", "install_route_index"]

_ONE_SEGMENT = (StringConvertor, IntegerConvertor, FloatConvertor, UUIDConvertor)  # no "/"
_Key = tuple[int, str, str | None]  # segments, first segment, last segment (None: any)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One route of the app, in the app's order: how the scan tests it and, if the index may,
    the included router to handle it through."""

    order: int
    route: Any  # what answers `matches`: an effective route context or a top-level route
    api_route: APIRoute | None  # tested through `APIRoute.matches`, which adds itself to the scope
    included: Any  # the `_IncludedRouter` it came through, when it can be handled directly

    def match(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = self.route.matches(scope)
        if match is not Match.NONE and self.api_route is not None:
            child_scope["route"] = self.api_route
        return match, child_scope


class RouteIndex:
    """The app router's entry point with the index in front (`router.middleware_stack`)."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self._routers: tuple[APIRouter, ...] = ()  # the app's router and every router included in it
        self._version: list[tuple[int, int]] | None = None
        self._by_key: dict[_Key, tuple[_Entry, ...]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            found = self.find(scope)
            if found is not None:
                await self._handle(found, scope, receive, send)
                return
        await self.router.app(scope, receive, send)

    def find(self, scope: Scope) -> tuple[_Entry, Scope] | None:
        """The route the router's scan would pick, if it is one this index may hand over."""
        if self._version != [(r._routes_version, len(r.routes)) for r in self._routers]:
            self._routers = _routers(self.router)
            self._by_key = _build(self.router)
            self._version = [(r._routes_version, len(r.routes)) for r in self._routers]
        parts = get_route_path(scope).split("/")
        n, first = len(parts), parts[1] if len(parts) > 1 else ""
        entries = self._by_key.get((n, first, parts[-1]))
        for entry in self._by_key.get((n, first, None), ()) if entries is None else entries:
            match, child_scope = entry.match(scope)
            if match is Match.FULL:
                return (entry, child_scope) if entry.included is not None else None
        return None

    async def _handle(self, found: tuple[_Entry, Scope], scope: Scope, receive: Receive, send: Send) -> None:
        # the app router's `app` up to its `route.handle`, then the included router's
        # `handle` and `_handle_selected` (FastAPI's routing.py), without the scans
        (entry, child_scope), router = found, self.router
        included, context = entry.included, entry.route
        fr._apply_router_form_limits(scope, router.form_limits)
        scope.setdefault("router", router)
        fr._apply_router_form_limits(scope, included.include_context.form_limits)
        fastapi_scope = fr._get_fastapi_scope(scope)
        fastapi_scope[fr._FASTAPI_INCLUDED_ROUTER_KEY] = included
        fr._update_scope(scope, child_scope)
        path = getattr(context.starlette_route, "path_format", None) or context.path_format
        _ROUTE_SELECTED(scope=scope, path=path, mount=False)
        fastapi_scope[fr._FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY] = context
        scope["route"] = context.original_route
        await context.original_route.handle(scope, receive, send)


def install_route_index(router: APIRouter) -> bool:
    """Put the index in front of the router's own `app`, if nothing else is there and FastAPI
    has the included-router internals it mirrors (0.165 does; older ones scan once and differ)."""
    if _ROUTE_SELECTED is None or not all(hasattr(fr, name) for name in _INTERNALS):
        return False
    if router.middleware_stack != router.app:  # the router has middleware of its own: leave it
        return False
    router.middleware_stack = RouteIndex(router)
    return True


def _optional(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


_ROUTE_SELECTED = _optional("fastapi.telemetry._api", "_route_selected")  # telemetry's http.route
_INTERNALS = (
    "_IncludedRouter",
    "_EffectiveRouteContext",
    "_apply_router_form_limits",
    "_get_fastapi_scope",
    "_update_scope",
    "_FASTAPI_INCLUDED_ROUTER_KEY",
    "_FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY",
)


def _routers(router: APIRouter) -> tuple[APIRouter, ...]:
    """The router and those included in it, at any depth: a change to any of them counts."""
    found = [router]
    for route in router.routes:
        if isinstance(route, fr._IncludedRouter):
            found.extend(r for r in _routers(route.original_router) if all(r is not f for f in found))
    return tuple(found)


class _Unindexable(Exception):
    """A route whose test the index does not know how to reproduce: the router scans."""


def _build(router: APIRouter) -> dict[_Key, tuple[_Entry, ...]]:
    try:
        entries = _entries(router)
    except _Unindexable:
        return {}
    keyed: dict[_Key, list[_Entry]] = {}
    by_first: dict[str, list[tuple[int, _Entry]]] = {}  # with the fewest segments they match
    anywhere: list[_Entry] = []
    for entry in entries:
        key, first, fewest = _key(entry.route)
        if key is not None:
            keyed.setdefault(key, []).append(entry)
            keyed.setdefault((key[0], key[1], None), [])
        elif first is not None:
            by_first.setdefault(first, []).append((fewest, entry))
        else:
            anywhere.append(entry)
    table: dict[_Key, tuple[_Entry, ...]] = {}
    for (n, first, last), own in keyed.items():
        shared = [*(e for fewest, e in by_first.get(first, ()) if fewest <= n), *anywhere]
        if last is not None:  # and the routes whose last segment is a parameter
            shared.extend(keyed[(n, first, None)])
        table[(n, first, last)] = tuple(sorted([*own, *shared], key=_order))
    return table


def _order(entry: _Entry) -> int:
    return entry.order


def _entries(router: APIRouter) -> list[_Entry]:
    """Every route in the order the router's scan meets them (included routers flattened)."""
    entries: list[_Entry] = []
    for route in router.routes:
        if not isinstance(route, fr._IncludedRouter):
            entries.append(_Entry(len(entries), route, None, None))
            continue
        top = route.effective_candidates()
        for context in route.effective_route_contexts():
            original = context.original_route
            if not isinstance(original, APIRoute):
                entries.append(_Entry(len(entries), context, None, None))
                continue
            if type(original).matches is not APIRoute.matches:
                raise _Unindexable(original)
            direct = type(original).handle is APIRoute.handle and any(c is context for c in top)
            entries.append(_Entry(len(entries), context, original, route if direct else None))
    return entries


def _key(route: Any) -> tuple[_Key | None, str | None, int]:
    """(segments, first segment, last segment or None) if the route can only match such paths;
    else its fixed first segment, if its test needs one; and the fewest segments it can match
    (every "/" of its path is in the paths it matches)."""
    target = route.starlette_route if isinstance(route, fr._EffectiveRouteContext) else route
    kind: str | None = _REGEX  # an included FastAPI route: the context's own regex test
    if target is None:
        target = route
    else:
        kind = _KINDS.get(type(target).matches)
    path_format = getattr(target, "path_format", None)
    if kind is None or not isinstance(path_format, str) or not path_format.startswith("/"):
        return None, None, 0
    parts = path_format.split("/")
    first = parts[1] if "{" not in parts[1] else None
    convertors = getattr(target, "param_convertors", {}).values()
    if first is None or kind is not _REGEX or not all(isinstance(c, _ONE_SEGMENT) for c in convertors):
        return None, first, len(parts)
    return (len(parts), first, parts[-1] if "{" not in parts[-1] else None), first, len(parts)


_REGEX, _PREFIX = "regex", "prefix"  # a whole-path regex test; a test of the path's start
_KINDS = {
    APIRoute.matches: _REGEX,
    routing.Route.matches: _REGEX,
    routing.Mount.matches: _PREFIX,
    APIWebSocketRoute.matches: _PREFIX,  # never an HTTP request: kept where its path says
    routing.WebSocketRoute.matches: _PREFIX,
}
