"""Operations: health, Prometheus metrics, and the keys that sign completion receipts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response

from studiolo import __version__
from studiolo.api import responses as s
from studiolo.faces.http.deps import Door, MetricsDep
from studiolo.faces.http.rendered import RenderedRoute
from studiolo.observe.metrics import CONTENT_TYPE

__all__ = ["router"]

router = APIRouter(tags=["ops"], route_class=RenderedRoute)


@router.get("/healthz", summary="Liveness and readiness: the ledger answers and is initialized")
def healthz(door: Door) -> s.HealthOut:
    door.jwks()  # a read of the ledger's key: fails if the database is down or uninitialized
    return s.HealthOut(status="ok", version=__version__)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    summary="Prometheus text: requests and latencies by route, completions by outcome and reason, ...",
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics(metrics: MetricsDep) -> Response:
    return Response(metrics.render(), media_type=CONTENT_TYPE)


@router.get("/.well-known/jwks.json", summary="The Ed25519 keys that sign completion receipts")
def jwks(door: Door) -> dict[str, Any]:
    return door.jwks()
