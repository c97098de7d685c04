"""What an operation's function is handed, by parameter name: the door, the metrics, the
settings, the caller and its token (from the token only).

The one path (`path.py`) fills these names itself. The annotations below let FastAPI fill
them too, for the routes registered from the same functions (the acceptance suite's oracle,
`tests/faces/test_one_path.py`; a request the path does not answer never reaches them).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from studiolo._exceptions import Unauthenticated
from studiolo.core.model import Principal
from studiolo.faces.bearer import bearer_token
from studiolo.observe.metrics import Metrics
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = ["PRINCIPAL_KEY", "BearerToken", "Caller", "Door", "MetricsDep", "SettingsDep"]

PRINCIPAL_KEY = "studiolo_principal"  # where the caller is left (for the request's log line)


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


Door = Annotated[Coordinator, Depends(_door)]
BearerToken = Annotated[str, Depends(_token)]
Caller = Annotated[Principal, Depends(_caller)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
SettingsDep = Annotated[Settings, Depends(_settings)]
