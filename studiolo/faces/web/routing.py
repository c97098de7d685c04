"""The dashboard's routes: a function per page or form, handed what it names.

`request`, `door`, `session` and `caller` by name (a page that names `session` or `caller`
needs a live session: without one, the sign-in page); its path's parameters; and its query
parameters, bounded by a pydantic `Field` in `Annotated` (refused: problem+json, as the
API's). A `StudioloError` becomes a page with the same status and reason, never JSON.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from studiolo._exceptions import StudioloError, Unauthenticated
from studiolo.faces.query import model_of, parse_query
from studiolo.faces.web.errors import to_sign_in
from studiolo.faces.web.session import caller_of, session_of
from studiolo.faces.web.templating import render

__all__ = ["WebRoute", "WebRouter"]

F = TypeVar("F", bound=Callable[..., Any])
_INJECTED = frozenset({"request", "door", "session", "caller"})


class WebRoute(Route):
    """One page or form: `fn` answers `method` on `path` (that method only: a HEAD is a 405)."""

    def __init__(self, path: str, method: str, fn: Callable[..., Any]) -> None:
        super().__init__(path, self._answer, methods=[method])
        self.methods = {method}
        self.fn, self.awaited = fn, inspect.iscoroutinefunction(fn)
        params = inspect.signature(fn, eval_str=True).parameters
        self.names = frozenset(params)
        declared = {n: p for n, p in params.items() if n not in _INJECTED and n not in self.param_convertors}
        self.query = model_of(f"{fn.__name__}_query", declared)

    async def _answer(self, request: Request) -> Response:
        try:
            known = await self._known(request)
        except StudioloError as exc:
            return _page(request, exc)
        given = {**request.path_params, **known}
        if self.query is not None:  # checked once the caller is known; refused as the API refuses
            given.update(parse_query(self.query, request.scope.get("query_string", b"")))
        kwargs = {n: v for n, v in given.items() if n in self.names}
        try:
            if self.awaited:
                answer: Response = await self.fn(**kwargs)
            else:
                answer = await run_in_threadpool(self.fn, **kwargs)
        except StudioloError as exc:
            return _page(request, exc)
        return answer

    async def _known(self, request: Request) -> dict[str, Any]:
        known: dict[str, Any] = {"request": request, "door": request.app.state.coordinator}
        if self.names & {"session", "caller"}:
            known["session"] = session = session_of(request)
            if "caller" in self.names:
                known["caller"] = await run_in_threadpool(caller_of, request, session)
        return known


class WebRouter:
    """A module's routes, each path under `prefix`: `@router.get("/study")`."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.routes: list[WebRoute] = []

    def get(self, path: str) -> Callable[[F], F]:
        return self._add("GET", path)

    def post(self, path: str) -> Callable[[F], F]:
        return self._add("POST", path)

    def _add(self, method: str, path: str) -> Callable[[F], F]:
        def register(fn: F) -> F:
            self.routes.append(WebRoute(self.prefix + path, method, fn))
            return fn

        return register


def _page(request: Request, exc: StudioloError) -> Response:
    if isinstance(exc, Unauthenticated):
        return to_sign_in(request)
    return render(request, "error.html", exc.status, error=exc)
