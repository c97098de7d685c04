"""Operations: health, Prometheus metrics, and the keys that sign completion receipts."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from studiolo import __version__
from studiolo.api import responses as s
from studiolo.faces.http.operation import operation
from studiolo.observe.metrics import CONTENT_TYPE, Metrics
from studiolo.service import Coordinator

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("healthz")
def healthz(door: Coordinator) -> s.HealthOut:
    door.jwks()  # a read of the ledger's key: fails if the database is down or uninitialized
    return s.HealthOut(status="ok", version=__version__)


@operation("metrics")
def metrics(metrics: Metrics) -> Response:
    return Response(metrics.render(), media_type=CONTENT_TYPE)


@operation("jwks")
def jwks(door: Coordinator) -> dict[str, Any]:
    return door.jwks()
