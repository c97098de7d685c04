"""The completion request: the one question with an authoritative answer."""

from __future__ import annotations

import time

from starlette.responses import Response

from studiolo._exceptions import CompletionRejected
from studiolo.api import responses as s
from studiolo.api.requests import CompleteIn
from studiolo.core.model import Principal
from studiolo.faces.http.operation import operation
from studiolo.observe.metrics import Metrics
from studiolo.service import Coordinator, make_request

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("send_completion")
def complete(
    task_id: str, body: CompleteIn, response: Response, caller: Principal, door: Coordinator, metrics: Metrics
) -> s.CompletionOut:
    request = make_request(task_id=task_id, **body.model_dump())
    start = time.perf_counter()
    try:
        outcome = door.complete(caller, request)
    except CompletionRejected as exc:
        metrics.completion("rejected", exc.reason, time.perf_counter() - start)
        raise
    metrics.completion("replayed" if outcome.replay else "accepted", "", time.perf_counter() - start)
    response.headers["Idempotent-Replay"] = "true" if outcome.replay else "false"
    if outcome.replay:
        response.status_code = 200
    return s.CompletionOut.model_validate(outcome.completion)
