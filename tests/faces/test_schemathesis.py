"""Property-based API testing: schemathesis generates requests from /openapi.json and sends
them, authenticated as the service admin, to a real uvicorn socket. No 5xx, and every
response conforms to the document (status codes, content types, headers, body schemas)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks
from starlette.testclient import TestClient

from studiolo.faces.http.app import create_app
from studiolo.faces.http.server import ServerThread
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store
from tests.faces.helpers import issue_tokens
from tests.world import build_world

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    world = build_world(tmp_path_factory.mktemp("schemathesis"))
    token = issue_tokens(world)["admin"]
    with ServerThread(world.coord, Settings(database_url=world.coord.store.url)) as live:
        yield live.url, {"Authorization": f"Bearer {token}"}


def _document() -> dict[str, Any]:
    # Building the app opens no connection: the document needs no ledger (nor the app started).
    coordinator = Coordinator(Store("sqlite://"), Settings(database_url="sqlite://"))
    doc: dict[str, Any] = TestClient(create_app(coordinator, Settings())).get("/openapi.json").json()
    return doc


# The SSE stream never ends on its own: it is tested in test_e2e.
schema = schemathesis.openapi.from_dict(_document()).exclude(path_regex=r"/events/stream$")


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_api_conforms(case: Any, server: tuple[str, dict[str, str]]) -> None:
    url, auth = server
    response = case.call(base_url=url, headers=auth, timeout=30)
    case.validate_response(response, checks=CHECKS)
