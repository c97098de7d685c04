"""Per-request dependencies: the door, the metrics, and the caller (from the token only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from studiolo._exceptions import Unauthenticated
from studiolo.core.model import Principal
from studiolo.faces.http.metrics import Metrics
from studiolo.service import Coordinator

__all__ = ["Caller", "Door", "MetricsDep"]

_bearer = HTTPBearer(auto_error=False, description="a Studiolo token: `Authorization: Bearer stl_…`")


def _door(request: Request) -> Coordinator:
    door: Coordinator = request.app.state.coordinator
    return door


def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def _caller(
    door: Annotated[Coordinator, Depends(_door)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    if credentials is None:
        raise Unauthenticated("a bearer token is required")
    return door.authenticate(credentials.credentials)


Door = Annotated[Coordinator, Depends(_door)]
Caller = Annotated[Principal, Depends(_caller)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
