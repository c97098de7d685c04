"""The operation table (`studiolo/api/operations.py`) is the one description of the API:
the app serves exactly its rows, the OpenAPI document says what each row says, the body
caps are its caps, the client sends what it says, and docs/api.md shows it."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

import studiolo
from studiolo._client_ops import Operations
from studiolo._exceptions import StudioloError
from studiolo.api.generate import HAND_WRITTEN, render_client
from studiolo.api.operations import OPERATIONS, Operation, render_table
from studiolo.client import Client
from studiolo.core.enums import Action
from studiolo.faces.http.app import create_app
from studiolo.faces.http.limits import BodyCaps
from studiolo.faces.http.openapi import openapi_document
from studiolo.faces.http.path import served
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


@pytest.fixture(scope="module")
def app() -> Any:
    coordinator = Coordinator(Store("sqlite://"), Settings(database_url="sqlite://"))
    return create_app(coordinator, Settings())


def _routes() -> dict[tuple[str, str], Any]:
    """What the one path serves: each row with its registered function and response model."""
    return {(one.op.method, one.op.path): one for one in served(Settings())}


def _openapi(app: Any) -> dict[str, Any]:
    """The document the app serves at /openapi.json (the app not started: no lifespan)."""
    doc: dict[str, Any] = TestClient(app).get("/openapi.json").json()
    return doc


def test_the_app_serves_exactly_the_table(app: Any) -> None:
    table = {(op.method, op.path) for op in OPERATIONS.values()}
    assert set(_routes()) == table
    documented = {(m.upper(), p) for p, ops in _openapi(app)["paths"].items() for m in ops}
    assert {(m, p.replace("{path}", "{path:path}")) for m, p in documented} == table


def test_the_app_serves_the_document_generated_from_the_table(app: Any) -> None:
    doc = openapi_document()
    assert _openapi(app) == json.loads(json.dumps(doc))
    refs = re.findall(r'"\$ref": "#/components/schemas/(\w+)"', json.dumps(doc))
    assert refs and set(refs) <= set(doc["components"]["schemas"])  # every reference resolves
    replay = doc["paths"]["/v1/tasks/{task_id}/complete"]["post"]["responses"]
    assert "Idempotent-Replay" in replay["200"]["headers"] and "Idempotent-Replay" in replay["201"]["headers"]


@pytest.mark.parametrize("op", OPERATIONS.values(), ids=list(OPERATIONS))
def test_the_openapi_document_reads_the_row(app: Any, op: Operation) -> None:
    doc = openapi_document()["paths"][op.template][op.method.lower()]
    assert (doc["operationId"], doc["summary"], doc["tags"]) == (op.name, op.summary, [op.tag])
    assert {str(op.status), *map(str, op.errors)} <= set(doc["responses"])
    body = doc.get("requestBody")
    if op.body == "none":
        assert body is None
    elif op.body == "bytes":
        assert "application/octet-stream" in body["content"]
    else:
        schema = body["content"]["application/json"]["schema"]
        assert op.request in str(schema)
        assert body.get("required", False) is (op.body == "json")
    params = {p["name"]: p["in"] for p in doc.get("parameters", []) if p["in"] != "header"}
    assert params == {**dict.fromkeys(op.params, "path"), **dict.fromkeys(op.query, "query")}
    route = _routes()[(op.method, op.path)]
    assert route.model == op.response_model()
    assert op.request is None or op.request_model().__name__ == op.request


def test_body_caps_come_from_the_table() -> None:
    settings = Settings(max_blob_bytes=7_000, max_candidate_bytes=8_000, max_completion_bytes=9_000)
    caps = BodyCaps.from_settings(settings)
    for op in OPERATIONS.values():
        path = op.template.format(**dict.fromkeys(op.params, "x1"))
        assert caps.for_request(op.method, path) == min(getattr(settings, op.cap), caps.ceiling), op.name
    assert caps.for_request("POST", "/v1/attempts/a/b/candidates") == settings.max_json_bytes


def test_the_client_operations_are_generated_from_the_table() -> None:
    """A new row or field reaches the client: the checked-in module is what the generator writes."""
    checked_in = Path(studiolo.__file__).parent / "_client_ops.py"
    assert checked_in.read_text() == render_client(), (
        "run: python -m studiolo.api.generate > studiolo/_client_ops.py"
    )


def test_every_row_is_generated_or_hand_written_in_the_client() -> None:
    generated = {n for n, v in vars(Operations).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert generated.isdisjoint(HAND_WRITTEN) and generated | set(HAND_WRITTEN) == set(OPERATIONS)
    assert set(HAND_WRITTEN) <= set(vars(Client)), sorted(set(HAND_WRITTEN) - set(vars(Client)))


def test_a_generated_method_sends_its_request_model_with_the_model_defaults() -> None:
    """Positional and keyword arguments, tuples for lists, None for a dict's default, and a
    None a field requires (an edit that deletes) reach the wire as the model would send them."""
    from studiolo.api import requests as q

    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(599, json={"reason": "recorded"})

    client = Client("http://test", "t", project="prj_1", transport=httpx.MockTransport(record))
    calls: list[tuple[Callable[[], object], Any]] = [
        (lambda: client.register_checker("c", "1", config=None), q.CheckerIn(name="c", version="1")),
        (lambda: client.edit_artifact("a.txt", None, 3), q.ArtifactEditIn(digest=None, base_revision=3)),
        (
            lambda: client.grant("prn_1", (Action.READ,), ("src/**",)),
            q.GrantIn(principal_id="prn_1", actions=[Action.READ], scope=["src/**"]),
        ),
        (lambda: client.handoff("att_1", notes="n"), q.HandoffIn(notes="n")),
        (lambda: client.claim("tas_1", 30.0), q.ClaimIn(lease_seconds=30.0)),
    ]
    for call, model in calls:
        with pytest.raises(StudioloError):
            call()
        assert json.loads(sent[-1].content) == json.loads(model.model_dump_json())


def test_every_client_method_that_calls_the_api_is_a_row() -> None:
    """A row's name is the `Client` method that sends it; every such method exists."""
    names = {n for n, _ in inspect.getmembers(Client, inspect.isfunction) if not n.startswith("_")}
    assert set(OPERATIONS) <= names, sorted(set(OPERATIONS) - names)


# each row's client method, called with values that make the URL (the recording transport
# answers every request 599, so no method gets further than sending)
_ARGS: dict[str, dict[str, Any]] = {
    "create_project": {"name": "p"},
    "add_principal": {"name": "n", "kind": "agent"},
    "set_public_key": {"public_key": "k"},
    "grant": {"principal_id": "prn_1", "actions": ["read"]},
    "publish_policy": {"text": "t"},
    "register_checker": {"name": "c", "version": "1"},
    "create_task": {"title": "t", "criteria": {"c": "x@1"}, "scope": ["**"]},
    "reassign": {"principal_id": "prn_1"},
    "put_blob": {"data": b"x"},
    "edit_artifact": {"digest": None, "base_revision": 1},
    "send_candidate": {"body": None},
    "collection": {"prefix": "src/"},
    "observe": {"target": "t", "kind": "k"},
    "post_receipt": {"body": {}, "signature": "s"},
    "reuse_receipt": {"receipt_id": "rcp_1"},
    "send_completion": {"body": None},
    "add_remote_org": {"name": "o", "keys": {"k": "v"}},
    "set_remote_origins": {"origins": []},
    "delegate": {"org": "o", "agent_url": "https://a"},
    "review": {"decision": "finalize"},
    "git_import": {"files": {}, "source": {}},
    "git_mirror": {"url": "https://m"},
    "set_retention": {"periods": {"candidates": 60.0}},
    "place_hold": {"reason": "r"},
    "release_hold": {"reason": "r"},
    "delete_bytes": {"digest": "sha256:" + "0" * 64, "reason": "r"},
}


@pytest.mark.parametrize("op", OPERATIONS.values(), ids=list(OPERATIONS))
def test_the_client_sends_the_row(op: Operation) -> None:
    from studiolo.api import requests as q

    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(599, json={"reason": "recorded"})

    client = Client("http://test", "t", project="prj_1", transport=httpx.MockTransport(record))
    values = {p: "prj_1" if p == "project_id" else f"{p[:3]}_1" for p in op.params}
    kwargs = {p: v for p, v in values.items() if p != "project_id"}
    kwargs.update(_ARGS.get(op.name, {}))
    if op.name == "send_candidate":
        kwargs["body"] = q.CandidateIn(files={}, bases={})
    if op.name == "send_completion":
        kwargs["body"] = q.CompleteIn(
            request_id="r", attempt_id="a", fence=1, contract_hash="h", candidate_id="c"
        )
    method = getattr(client, op.name)
    accepted = inspect.signature(method).parameters
    with pytest.raises(Exception):  # noqa: B017 - the 599 is raised in any form
        result = method(**{k: v for k, v in kwargs.items() if k in accepted})
        if inspect.isgenerator(result):
            next(result)
    assert sent, op.name
    assert (sent[0].method, sent[0].url.path) == (op.method, op.template.format(**values))


def test_the_docs_table_is_generated() -> None:
    text = DOCS.read_text()
    begin, end = "<!-- operations: begin -->\n", "<!-- operations: end -->"
    assert text[text.index(begin) + len(begin) : text.index(end)] == render_table(), (
        "run: python -c 'from studiolo.api.operations import render_table; print(render_table(), end=\"\")'"
        " and paste it between the operations markers of docs/api.md"
    )
