"""Per-request dependencies: the door, the metrics, and the caller (from the token only).

The table's operations take the one path (`path.py`), which authenticates before it reads a
body; these dependencies serve the FastAPI routes registered from the same functions.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.openapi.models import HTTPBearer as HTTPBearerModel
from fastapi.security.base import SecurityBase
from starlette.concurrency import run_in_threadpool

from studiolo._exceptions import Unauthenticated
from studiolo.core.model import Principal
from studiolo.faces.bearer import bearer_token
from studiolo.observe.metrics import Metrics
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = [
    "PRINCIPAL_KEY",
    "BearerToken",
    "Caller",
    "Door",
    "MetricsDep",
    "SettingsDep",
]

_PRINCIPAL = PRINCIPAL_KEY = "studiolo_principal"  # where the path leaves the caller (for the log line)
_BEARER = HTTPBearerModel(description="a Studiolo token: `Authorization: Bearer stl_…`")


# The dependencies are `async def` leaves that take the request and nothing else. FastAPI runs
# a plain `def` dependency in the threadpool (a hop there per dependency cost more than the hot
# routes' own work), and solves every level of a dependency tree on the event loop at each
# request: the caller was four levels (HTTPBearer → token → caller, with the door), now one.
# Only a token lookup that reads the ledger blocks, and only it goes to the threadpool: a token
# the door knows without a read (`authenticate_cached`) is answered on the event loop.
async def _door(request: Request) -> Coordinator:
    door: Coordinator = request.app.state.coordinator
    return door


async def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


class _BearerScheme(SecurityBase):
    """The bearer scheme as OpenAPI shows it (what `HTTPBearer` declares, under its name), read
    in one step: the token as `HTTPBearer(auto_error=False)` parses it, or 401."""

    def __init__(self) -> None:
        self.model = _BEARER
        self.scheme_name = "HTTPBearer"

    @staticmethod
    def token(request: Request) -> str:
        token = bearer_token(request.scope)
        if token is None:
            raise Unauthenticated("a bearer token is required")
        return token


class _TokenScheme(_BearerScheme):
    async def __call__(self, request: Request) -> str:
        return self.token(request)


class _CallerScheme(_BearerScheme):
    async def __call__(self, request: Request) -> Principal:
        token = self.token(request)
        known = request.scope.get("state", {}).get(_PRINCIPAL)
        if isinstance(known, Principal):
            return known
        door: Coordinator = request.app.state.coordinator
        principal = door.authenticate_cached(token)
        if principal is None:
            principal = await run_in_threadpool(door.authenticate, token)
        request.scope.setdefault("state", {})[_PRINCIPAL] = principal  # for the request's log line
        return principal


Door = Annotated[Coordinator, Depends(_door)]
BearerToken = Annotated[str, Security(_TokenScheme())]
Caller = Annotated[Principal, Security(_CallerScheme())]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
SettingsDep = Annotated[Settings, Depends(_settings)]
