"""FastAPI as the oracle of the one path (`faces/http/path.py`): the table's functions
registered as FastAPI routes, exactly as the HTTP face registered them while it was a FastAPI
app (method, path, status, response model, operation id from the row; the door, the caller,
the token, the metrics and the settings as dependencies; query and header bounds as `Query`
and `Header`). The package no longer imports FastAPI; the acceptance suite
(`test_one_path.py`) still holds the path to what FastAPI answered."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, get_args

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic.fields import FieldInfo
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import State
from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from studiolo._exceptions import Unauthenticated
from studiolo.api.operations import OPERATIONS, Operation
from studiolo.api.requests import invalid_request
from studiolo.core.model import Principal
from studiolo.faces.bearer import bearer_token
from studiolo.faces.http.limits import BodyCaps, BodyLimit
from studiolo.faces.http.operation import FUNCTIONS
from studiolo.faces.http.path import PRINCIPAL_KEY
from studiolo.faces.http.problems import install_handlers, problem_response
from studiolo.observe.metrics import Metrics
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = ["FastAPIRoutes"]


class FastAPIRoutes:
    """ASGI middleware in the one path's place: a request to a path of the table goes to a
    FastAPI app whose routes are the table's functions; anything else goes on to `app`."""

    def __init__(self, app: ASGIApp, state: State, caps: BodyCaps) -> None:
        self.app = app
        self.fastapi = FastAPI(openapi_url=None)
        self.fastapi.state = state
        install_handlers(self.fastapi)
        self.fastapi.add_exception_handler(RequestValidationError, _validation_error)
        self.fastapi.add_middleware(BodyLimit, caps=caps)
        for op in OPERATIONS.values():
            self.fastapi.router.add_api_route(
                op.path,
                _dependent(op, FUNCTIONS[op.name]),
                methods=[op.method],
                status_code=op.status,
                summary=op.summary,
                tags=[op.tag],
                operation_id=op.name,
                response_model=op.response_model(),
            )
        self.patterns = [compile_path(op.path)[0] for op in OPERATIONS.values()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(p.match(_route_path(scope)) for p in self.patterns):
            await self.fastapi(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _route_path(scope: Scope) -> str:
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root + "/") else path


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    found = invalid_request(exc.errors())
    return problem_response(found.status, found.reason, found.detail)


async def _door(request: Request) -> Coordinator:
    door: Coordinator = request.app.state.coordinator
    return door


async def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _token(request: Request) -> str:
    token = bearer_token(request.scope)
    if token is None:
        raise Unauthenticated("a bearer token is required")
    return token


async def _caller(request: Request) -> Principal:
    token = await _token(request)
    door: Coordinator = request.app.state.coordinator
    principal = door.authenticate_cached(token)
    if principal is None:
        principal = await run_in_threadpool(door.authenticate, token)
    request.scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
    return principal


_DEPENDS: dict[str, Any] = {
    "door": Depends(_door),
    "caller": Depends(_caller),
    "token": Depends(_token),
    "metrics": Depends(_metrics),
    "settings": Depends(_settings),
}


def _dependent(op: Operation, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with a signature FastAPI fills as it filled the route's."""
    signature = inspect.signature(fn, eval_str=True)
    params = []
    for p in signature.parameters.values():
        if p.name in _DEPENDS:
            p = p.replace(annotation=Annotated[p.annotation, _DEPENDS[p.name]])
        elif any(isinstance(m, FieldInfo) for m in getattr(p.annotation, "__metadata__", ())):
            p = p.replace(annotation=_bounded(p.annotation, Query if p.name in op.query else Header))
        params.append(p)
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **kwargs)

    else:

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    call.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return call


def _bounded(annotation: Any, kind: Callable[..., Any]) -> Any:
    """`Annotated[T, Field(ge=1)]` as `Annotated[T, Query(ge=1)]` (or `Header`)."""
    base, *meta = get_args(annotation)
    field = next(m for m in meta if isinstance(m, FieldInfo))
    bounds = {k: v for m in field.metadata for k, v in dataclasses.asdict(m).items()}
    return Annotated[base, kind(description=field.description, **bounds)]
