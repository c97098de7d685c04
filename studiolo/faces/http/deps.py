"""Per-request dependencies: the door, the metrics, and the caller (from the token only).

`AuthenticateFirst` knows the caller of a `/v1` request that carries a body before a byte
of that body is read: with no valid token the answer is 401 and the body stays unread.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from studiolo._exceptions import StudioloError, Unauthenticated
from studiolo.core.model import Principal
from studiolo.faces.http.metrics import Metrics
from studiolo.faces.http.problems import problem_response
from studiolo.service import Coordinator

__all__ = ["PRINCIPAL_KEY", "AuthenticateFirst", "BearerToken", "Caller", "Door", "MetricsDep"]

_bearer = HTTPBearer(auto_error=False, description="a Studiolo token: `Authorization: Bearer stl_…`")
_PRINCIPAL = PRINCIPAL_KEY = "studiolo_principal"  # where AuthenticateFirst leaves the caller


# The dependencies are `async def`: FastAPI runs a plain `def` dependency in the threadpool,
# and a hop there per dependency cost more than the hot routes' own work. Only a token
# lookup that reads the ledger blocks, and only it goes to the threadpool: a token the door
# knows without a read (`authenticate_cached`) is answered on the event loop.
async def _door(request: Request) -> Coordinator:
    door: Coordinator = request.app.state.coordinator
    return door


async def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


async def _token(credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]) -> str:
    if credentials is None:
        raise Unauthenticated("a bearer token is required")
    return credentials.credentials


async def _caller(
    request: Request, door: Annotated[Coordinator, Depends(_door)], token: Annotated[str, Depends(_token)]
) -> Principal:
    known = request.scope.get("state", {}).get(_PRINCIPAL)
    if isinstance(known, Principal):
        return known
    principal = door.authenticate_cached(token)
    if principal is None:
        principal = await run_in_threadpool(door.authenticate, token)
    return principal


Door = Annotated[Coordinator, Depends(_door)]
BearerToken = Annotated[str, Depends(_token)]
Caller = Annotated[Principal, Depends(_caller)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]


class AuthenticateFirst:
    """Authenticate `/v1` requests that carry a body before the app (and its body parsing) runs."""

    def __init__(self, app: ASGIApp, door: Coordinator, prefix: str = "/v1/") -> None:
        self.app = app
        self.door = door
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix) or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        token = _bearer_token(scope)
        try:
            principal = self.door.authenticate_cached(token)
            if principal is None:
                principal = await run_in_threadpool(self.door.authenticate, token)
        except StudioloError as exc:
            headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
            await problem_response(exc.status, exc.reason, exc.detail, headers=headers)(scope, receive, send)
            return
        scope.setdefault("state", {})[_PRINCIPAL] = principal
        await self.app(scope, receive, send)


def _has_body(scope: Scope) -> bool:
    headers = dict(scope["headers"])
    return headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers


def _bearer_token(scope: Scope) -> str | None:
    value = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
