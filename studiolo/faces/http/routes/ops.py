"""Operations: health, Prometheus metrics, and the keys that sign completion receipts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from studiolo import __version__
from studiolo.api import responses as s
from studiolo.faces.http.deps import Door, MetricsDep
from studiolo.faces.http.operation import operation
from studiolo.observe.metrics import CONTENT_TYPE

__all__ = ["router"]

router = APIRouter()


@operation(router, "healthz")
def healthz(door: Door) -> s.HealthOut:
    door.jwks()  # a read of the ledger's key: fails if the database is down or uninitialized
    return s.HealthOut(status="ok", version=__version__)


@operation(router, "metrics")
def metrics(metrics: MetricsDep) -> Response:
    return Response(metrics.render(), media_type=CONTENT_TYPE)


@operation(router, "jwks")
def jwks(door: Door) -> dict[str, Any]:
    return door.jwks()
