"""OpenTelemetry: a server span per request named by its route template, a door span per
operation inside it (the SDK's in-memory exporter), and none at all when tracing is off."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from studiolo.faces.http.app import create_app
from studiolo.settings import Settings
from tests.faces.helpers import PortalTransport, issue_tokens
from tests.world import World


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield provider, spans
    provider.shutdown()


def _calls(world: World, provider: TracerProvider | None) -> list[httpx.Response]:
    app = create_app(world.coord, Settings(database_url=world.coord.store.url), tracer_provider=provider)
    transport = PortalTransport(app)
    token = issue_tokens(world)["agent"]
    task = world.new_task()
    try:
        with httpx.Client(
            base_url="http://t", transport=transport, headers={"Authorization": f"Bearer {token}"}
        ) as c:
            return [
                c.post(f"/v1/tasks/{task.id}/attempts", json={}),
                c.post(f"/v1/tasks/{task.id}/attempts", json={}),  # 409: already claimed
                c.get("/v1/tasks/nope/x/y"),  # no route
            ]
    finally:
        transport.shutdown()


def test_a_span_per_request_and_per_door_operation(
    world: World, exporter: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, spans = exporter
    answers = _calls(world, provider)
    assert [r.status_code for r in answers] == [201, 409, 404]
    finished: list[ReadableSpan] = list(spans.get_finished_spans())
    servers = [s for s in finished if s.kind == SpanKind.SERVER]
    assert [s.name for s in servers] == ["POST /v1/tasks/{task_id}/attempts"] * 2 + ["GET unmatched"]
    assert [s.attributes["http.response.status_code"] for s in servers] == [201, 409, 404]  # type: ignore[index]
    assert [s.attributes["studiolo.request_id"] for s in servers] == [  # type: ignore[index]
        r.headers["x-request-id"] for r in answers
    ]
    doors = [s for s in finished if s.name == "door.claim"]
    assert len(doors) == 2
    for door, server in zip(doors, servers, strict=False):  # each inside its request's span
        assert door.parent is not None and door.parent.span_id == server.context.span_id
        assert door.context.trace_id == server.context.trace_id
    assert doors[1].status.status_code == StatusCode.ERROR
    assert doors[1].attributes["studiolo.reason"] == "task_already_claimed"  # type: ignore[index]


def test_no_span_when_tracing_is_off(
    world: World, exporter: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    _, spans = exporter
    _calls(world, None)
    assert not spans.get_finished_spans()
