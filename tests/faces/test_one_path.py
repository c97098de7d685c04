"""The one path (`faces/http/path.py`) answers every operation of the table exactly as the
FastAPI route registered for it would: the same status, headers that matter and body, for
well-formed and hostile requests. Each request goes to the app and to one with FastAPI's
routes in the path's place (`oracle.py`), over the same ledger at the same (manual) clock.

This file replaces the lane-versus-route tests of `hot.py` and the index-versus-scan tests of
`dispatch.py`: the same cases, now held against the path that replaced both."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.middleware import Middleware

from studiolo.api.operations import OPERATIONS
from studiolo.faces.http import leases
from studiolo.faces.http.app import create_app
from studiolo.faces.http.limits import BodyCaps
from studiolo.faces.http.path import OperationPath
from studiolo.settings import Settings
from tests.faces.helpers import issue_tokens
from tests.faces.oracle import FastAPIRoutes
from tests.world import World


def _apps(world: World) -> tuple[Any, Any]:
    settings = Settings(database_url=world.coord.store.url)
    fast, plain = create_app(world.coord, settings), create_app(world.coord, settings)
    oracle = Middleware(FastAPIRoutes, state=plain.state, caps=BodyCaps.from_settings(settings))
    plain.user_middleware = [oracle if m.cls is OperationPath else m for m in plain.user_middleware]
    return fast, plain


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The routes FastAPI handled (the path answers the table's `def` routes without it)."""
    seen: list[str] = []
    handle = APIRoute.handle

    async def recording(self: APIRoute, scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(self.operation_id or self.name)
        await handle(self, scope, receive, send)

    monkeypatch.setattr(APIRoute, "handle", recording)
    return seen


def _call(
    app: Any, path: str, headers: dict[str, str], content: bytes | None, method: str = "POST"
) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://studiolo.test") as http:
            return await http.request(method, path, headers=headers, content=content)

    return asyncio.run(go())


def test_a_heartbeat_gets_the_routes_answer(world: World, handled: list[str]) -> None:
    tokens = issue_tokens(world)
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    other = world.coord.claim(world.agent2, world.new_task("other").id, 60)
    fast, plain = _apps(world)
    js = {"Content-Type": "application/json"}
    agent = {"Authorization": f"Bearer {tokens['agent']}", **js}
    cases: list[tuple[str, dict[str, str], bytes | None]] = [
        (att.id, agent, b'{"lease_seconds": 90}'),
        (att.id, agent, b""),
        (att.id, agent, b"{}"),
        (att.id, agent, b'{"lease_seconds": null}'),
        (att.id, agent, b'{"lease_seconds": 0.5}'),  # under the minimum: the door refuses
        (att.id, agent, b'{"lease_seconds": 1e9}'),
        (att.id, agent, b'{"lease_seconds": "90"}'),
        (att.id, agent, b'{"lease_seconds": 90, "extra": 1}'),
        (att.id, agent, b"{not json"),
        (att.id, agent, b"null"),
        (att.id, agent, b"[]"),
        (att.id, {**agent, "Content-Type": "text/plain"}, b'{"lease_seconds": 90}'),
        (att.id, js, b'{"lease_seconds": 90}'),  # no token
        (att.id, {"Authorization": "Bearer stl_nope", **js}, b"{}"),
        (att.id, {"Authorization": "Basic abc", **js}, b"{}"),
        (other.id, agent, b"{}"),  # another principal's attempt
        ("att_doesnotexist00", agent, b"{}"),
        ("not-an-id", agent, b"{}"),
        ("%2e%2e", agent, b"{}"),
    ]
    for attempt_id, headers, body in cases:
        path = f"/v1/attempts/{attempt_id}/heartbeat"
        handled.clear()
        a = _call(fast, path, headers, body)
        assert handled == [], "the path answered, not FastAPI"
        b = _call(plain, path, headers, body)
        where = f"{attempt_id} {headers.get('Content-Type')} {body!r}"
        assert (a.status_code, a.headers.get("content-type")) == (
            b.status_code,
            b.headers.get("content-type"),
        ), where
        assert json.loads(a.content) == json.loads(b.content), where
        assert a.headers.get("www-authenticate") == b.headers.get("www-authenticate"), where
    world.coord.release(world.agent, att.id)  # and once the attempt is over
    for app in (fast, plain):
        gone = _call(app, f"/v1/attempts/{att.id}/heartbeat", agent, b"{}")
        assert gone.status_code == 409 and gone.json()["reason"] == "attempt_not_active"


def _same(a: httpx.Response, b: httpx.Response, where: str) -> None:
    assert (a.status_code, a.headers.get("content-type")) == (b.status_code, b.headers.get("content-type")), (
        where
    )
    assert a.content == b.content, (where, a.content, b.content)
    for name in ("www-authenticate", "idempotent-replay", "content-length"):
        assert a.headers.get(name) == b.headers.get(name), (where, name)


def test_a_completion_gets_the_routes_answer(world: World, handled: list[str]) -> None:
    """Every byte the same, refusals and replays included; metrics count as the route's do."""
    tokens = issue_tokens(world)
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/a.txt": b"done"})
    good = world.receipt(cand)
    failing = world.receipt(world.candidate(att, {"src/a.txt": b"no"}), result="fail")
    fast, plain = _apps(world)
    js = {"Content-Type": "application/json"}
    agent = {"Authorization": f"Bearer {tokens['agent']}", **js}
    body = {
        "request_id": "r-1",
        "attempt_id": att.id,
        "fence": att.fence,
        "contract_hash": task.contract_hash,
        "candidate_id": cand.id,
        "evidence": [good.id],
    }

    def raw(**change: Any) -> bytes:
        return json.dumps({**body, **change}).encode()

    refusals: list[tuple[str, dict[str, str], bytes | None]] = [
        (task.id, agent, raw(request_id="r-0", evidence=[failing.id])),  # a failing receipt
        (task.id, agent, raw(request_id="r-0", fence=att.fence + 1)),  # a stale fence
        (task.id, agent, raw(request_id="r-0", contract_hash="sha256:" + "0" * 64)),
        (task.id, {**agent, "Authorization": f"Bearer {tokens['agent2']}"}, raw(request_id="r-0")),
        (task.id, {**agent, "Authorization": f"Bearer {tokens['human']}"}, raw(request_id="r-0")),
        ("task_doesnotexist0", agent, raw(request_id="r-0")),
        ("%2e%2e", agent, raw(request_id="r-0")),
        (task.id, agent, raw(request_id="")),  # the door refuses the shape
        (task.id, agent, raw(request_id="\u0000")),
        (task.id, agent, raw(fence=-1)),
        (task.id, agent, raw(fence="1")),
        (task.id, agent, raw(fence=True)),
        (task.id, agent, raw(evidence="x")),
        (task.id, agent, raw(evidence=["x"] * 101)),
        (task.id, agent, raw(extra=1)),
        (task.id, agent, b"{not json"),
        (task.id, agent, b"[]"),
        (task.id, agent, b"null"),
        (task.id, agent, b""),
        (task.id, agent, raw(request_id="x" * 5000)),  # longer than a request id may be
        (task.id, agent, raw(request_id="x" * 200_000)),  # larger than a completion's body cap
        (task.id, {**agent, "Content-Type": "text/plain"}, raw()),
        (task.id, js, raw()),  # no token
        (task.id, {"Authorization": "Bearer stl_nope", **js}, raw()),
        (task.id, {"Authorization": "Basic abc", **js}, raw()),
    ]
    for task_id, headers, content in refusals:
        path = f"/v1/tasks/{task_id}/complete"
        handled.clear()
        a = _call(fast, path, headers, content)
        assert handled == [], "the path answered, not FastAPI"
        b = _call(plain, path, headers, content)
        _same(a, b, f"{task_id} {headers} {content!r}")
        assert a.status_code >= 400, content
    # The same, accepted, then replayed by either app: the replays are byte for byte alike.
    path = f"/v1/tasks/{task.id}/complete"
    accepted = _call(fast, path, agent, raw())
    assert accepted.status_code == 201 and accepted.headers["idempotent-replay"] == "false"
    again, plain_again = _call(fast, path, agent, raw()), _call(plain, path, agent, raw())
    _same(again, plain_again, "replay")
    assert again.status_code == 200 and again.headers["idempotent-replay"] == "true"
    assert again.json() == accepted.json()
    metrics = [_metric_lines(app) for app in (fast, plain)]
    assert 'studiolo_completions_total{outcome="accepted",reason=""} 1.0' in metrics[0]
    assert 'studiolo_completions_total{outcome="replayed",reason=""} 1.0' in metrics[0]
    assert 'studiolo_completions_total{outcome="replayed",reason=""} 1.0' in metrics[1]
    rejected = [
        [m for m in lines if m.startswith('studiolo_completions_total{outcome="rejected"')]
        for lines in metrics
    ]
    assert rejected[0] == rejected[1]
    assert {"attempt_superseded", "contract_mismatch", "evidence_not_bound", "task_not_found"} <= {
        m.split('reason="')[1].split('"')[0] for m in rejected[0]
    }


def test_a_task_view_gets_the_routes_answer(world: World, handled: list[str]) -> None:
    tokens = issue_tokens(world)
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    world.receipt(world.candidate(att, {"src/a.txt": b"done"}))
    from tests.world import add_project

    elsewhere = add_project(world.coord, world.admin, world.clock, "elsewhere").new_task()
    fast, plain = _apps(world)
    agent = {"Authorization": f"Bearer {tokens['agent']}"}
    cases: list[tuple[str, str, dict[str, str], bytes | None]] = [
        ("GET", task.id, agent, None),
        ("GET", f"{task.id}?x=1", agent, None),
        ("GET", task.id, {"Authorization": f"Bearer {tokens['human']}"}, None),
        ("GET", task.id, {"Authorization": f"Bearer {tokens['admin']}"}, None),
        ("GET", elsewhere.id, agent, None),  # another project's task
        ("GET", "tsk_doesnotexist00", agent, None),
        ("GET", "%2e%2e", agent, None),
        ("GET", "a%20b", agent, None),
        ("GET", task.id, {}, None),  # no token
        ("GET", task.id, {"Authorization": "Bearer stl_nope"}, None),
        ("GET", task.id, {"Authorization": "Basic abc"}, None),
        ("GET", task.id, {**agent, "Content-Type": "application/json"}, b"{}"),  # a body, unread
        ("HEAD", task.id, agent, None),
        ("DELETE", task.id, agent, None),
    ]
    for method, task_id, headers, content in cases:
        path = f"/v1/tasks/{task_id}"
        a, b = _call(fast, path, headers, content, method), _call(plain, path, headers, content, method)
        _same(a, b, f"{method} {task_id} {headers} {content!r}")
    assert handled.count("task") == 14, "FastAPI answered only the app without the path (405s too)"
    shown = _call(fast, f"/v1/tasks/{task.id}", agent, None, "GET").json()
    assert shown["task"]["id"] == task.id and len(shown["receipts"]) == 1


def _metric_lines(app: Any) -> list[str]:
    return app.state.metrics.render().decode().splitlines()  # type: ignore[no-any-return]


def test_the_lane_writes_queued_heartbeats_together(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """While one batch is being written, the heartbeats that arrive wait and go in the next
    one, together; each gets its own answer, a refused one included."""
    attempts = [world.coord.claim(world.agent, world.new_task(f"t{i}").id, 60) for i in range(5)]
    lane = leases.LeaseLane(world.coord)
    entered, release = threading.Event(), threading.Event()
    sizes: list[int] = []
    original = world.coord.heartbeats

    def held(beats: Any) -> Any:
        sizes.append(len(beats))
        entered.set()
        release.wait(10)
        return original(beats)

    monkeypatch.setattr(world.coord, "heartbeats", held)

    async def go() -> list[Any]:
        first = asyncio.ensure_future(lane.beat(world.agent, "-", attempts[0].id, 60))
        while not entered.is_set():
            await asyncio.sleep(0.001)
        rest = [asyncio.ensure_future(lane.beat(world.agent, "-", a.id, 60)) for a in attempts[1:]]
        refused = asyncio.ensure_future(lane.beat(world.agent2, "-", attempts[0].id, 60))
        await asyncio.sleep(0.05)
        release.set()
        return await asyncio.gather(first, *rest, refused)

    answers = asyncio.run(go())
    assert sizes == [1, 5]
    assert [json.loads(r.body)["id"] for r in answers[:5]] == [a.id for a in attempts]
    assert all(r.status_code == 200 for r in answers[:5])
    assert answers[5].status_code == 409
    assert json.loads(answers[5].body)["reason"] == "caller_not_attempt_owner"


def test_under_load_the_lane_takes_a_batch_at_most_once_per_window(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A heartbeat that finds the lane idle goes at once; those that arrive within a window
    of the last batch wait for the window's end and go together."""
    attempts = [world.coord.claim(world.agent, world.new_task(f"t{i}").id, 60) for i in range(4)]
    lane = leases.LeaseLane(world.coord, window=1.0)
    sizes: list[int] = []
    original = world.coord.heartbeats

    def counted(beats: Any) -> Any:
        sizes.append(len(beats))
        return original(beats)

    monkeypatch.setattr(world.coord, "heartbeats", counted)

    async def go() -> list[Any]:
        first = await lane.beat(world.agent, "-", attempts[0].id, 60)
        rest = []
        for a in attempts[1:]:  # one by one, as a fleet's arrive
            rest.append(asyncio.ensure_future(lane.beat(world.agent, "-", a.id, 60)))
            await asyncio.sleep(0.01)
        return [first, *await asyncio.gather(*rest)]

    answers = asyncio.run(go())
    assert sizes == [1, 3]
    assert [json.loads(r.body)["id"] for r in answers] == [a.id for a in attempts]


def test_the_lane_thread_ends_when_idle_and_comes_back(world: World) -> None:
    att = world.coord.claim(world.agent, world.new_task().id, 60)
    lane = leases.LeaseLane(world.coord, idle=0.05)
    tokens = issue_tokens(world)
    for _ in range(2):
        # no principal known: the lane authenticates the token itself
        answer = asyncio.run(lane.beat(None, tokens["agent"], att.id, None))
        assert answer.status_code == 200 and json.loads(answer.body)["id"] == att.id
        deadline = time.monotonic() + 10
        while lane.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not lane.running
    bad = asyncio.run(lane.beat(None, "stl_nope", att.id, None))
    assert bad.status_code == 401 and bad.headers["www-authenticate"] == "Bearer"


_TEXT = st.one_of(st.text(max_size=40), st.sampled_from(["", " ", "\x00", "é", "x" * 300]))
_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
    st.lists(_TEXT, max_size=4),
    st.dictionaries(_TEXT, st.integers(), max_size=2),
)
_FIELDS = ["request_id", "attempt_id", "fence", "contract_hash", "candidate_id", "evidence", "other"]


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_completion_body_gets_the_routes_answer(world: World, data: st.DataObject) -> None:
    """Hostile and near-valid bodies (real ids mixed in, evidence that can never suffice):
    the path's answer is the route's, byte for byte."""
    if not hasattr(world, "_lane_case"):
        tokens = issue_tokens(world)
        task = world.new_task()
        att = world.coord.claim(world.agent, task.id, 60)
        cand = world.candidate(att, {"src/a.txt": b"no"})
        failing = world.receipt(cand, result="fail")
        real = [att.id, cand.id, failing.id, task.contract_hash, task.id]
        base = {
            "attempt_id": att.id,
            "fence": att.fence,
            "contract_hash": task.contract_hash,
            "candidate_id": cand.id,
            "evidence": [failing.id],
        }
        world._lane_case = (tokens, task, att, real, base, _apps(world))  # type: ignore[attr-defined]
    tokens, task, att, real, base, (fast, plain) = world._lane_case  # type: ignore[attr-defined]
    ids = st.sampled_from(real)
    value = st.one_of(_VALUE, ids, st.lists(ids, max_size=3), st.just(att.fence))
    if data.draw(st.booleans()):  # anything at all
        body = data.draw(st.dictionaries(st.sampled_from(_FIELDS), value, max_size=7))
    else:  # a well-formed request, one or two fields changed or dropped
        body = {**base, "request_id": data.draw(_TEXT)}
        body.update(data.draw(st.dictionaries(st.sampled_from(_FIELDS), value, max_size=2)))
        for gone in data.draw(st.sets(st.sampled_from(_FIELDS[:6]), max_size=1)):
            body.pop(gone, None)
    raw = data.draw(st.sampled_from(["json", "bytes"]))
    content = json.dumps(body).encode() if raw == "json" else data.draw(st.binary(max_size=64))
    headers = {"Authorization": f"Bearer {tokens['agent']}", "Content-Type": "application/json"}
    path = f"/v1/tasks/{task.id}/complete"
    a, b = _call(fast, path, headers, content), _call(plain, path, headers, content)
    _same(a, b, repr(content))
    assert a.status_code >= 400  # no body here can be accepted: nothing moved between the calls
    event(f"status {a.status_code} {a.json().get('reason')}")


def test_the_path_refuses_a_token_revoked_after_it_was_cached(world: World) -> None:
    """The path authenticates through the door's cache: a revocation ends a token on the very
    next request, heartbeats and completions included, with the route's 401."""
    tokens = issue_tokens(world)
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    fast, _ = _apps(world)
    agent = {"Authorization": f"Bearer {tokens['agent']}", "Content-Type": "application/json"}
    completion = {
        "request_id": "r-1",
        "attempt_id": att.id,
        "fence": att.fence,
        "contract_hash": task.contract_hash,
        "candidate_id": "cnd_00000000000000000000000000000000",
        "evidence": [],
    }
    requests: list[tuple[str, str, bytes | None]] = [
        ("GET", f"/v1/tasks/{task.id}", None),
        ("POST", f"/v1/attempts/{att.id}/heartbeat", b"{}"),
        ("POST", f"/v1/tasks/{task.id}/complete", json.dumps(completion).encode()),
    ]
    assert _call(fast, requests[0][1], agent, None, "GET").status_code == 200  # cached now
    world.coord.revoke_tokens(world.admin, world.agent.id)
    for method, path, content in requests:
        answer = _call(fast, path, agent, content, method)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer", path
    assert world.coord.claim(world.agent, world.new_task("next").id, 60)  # the principal itself is fine


_SAMPLES = {"path": "a/b.txt", "int": "7", "float": "1.5", "uuid": "8c4f4d8e-1d8e-4b7a-9e0e-2b7f5b8f3b1a"}
_PARAM = re.compile(r"{([^}:]+)(?::([^}]+))?}")
_RANDOM = re.compile(rb"[A-Za-z0-9_-]{40,}|expires=[^;]*")
_METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS")


def _paths(app: Starlette) -> list[str]:
    paths = {"/", "/nope", "/v1", "/v1/", "/v1/nope", "/a2a", "/a2a/", "/mcp/", "/ui", "/ui/static/app.css"}
    routes = [getattr(r, "path", "") for r in app.routes] + [op.path for op in OPERATIONS.values()]
    for path in routes:
        if not path:
            continue
        for one in (False, True):  # a `{path:path}` of one segment, then of two
            sample = _fill(path, one)
            base = sample.rstrip("/") or "/"
            paths.update({sample, base, base + "/", base + "/zz", sample.upper(), "//" + sample.lstrip("/")})
    return sorted(paths)


def _fill(path: str, one_segment: bool) -> str:
    """The path with a sample for each parameter (a `{path:path}` of one segment or two)."""
    return _PARAM.sub(lambda m: _sample(m.group(2), one_segment), path)


def _sample(convertor: str | None, one_segment: bool) -> str:
    if convertor == "path" and one_segment:
        return "b.txt"
    return _SAMPLES.get(convertor or "", "x1")


def _request(app: Any, method: str, path: str, token: str | None, root_path: str = "") -> tuple[Any, ...]:
    headers = [(b"host", b"studiolo.test")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": root_path + path,
        "raw_path": (root_path + path).encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("studiolo.test", 80),
        "state": {},
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def call() -> str:
        try:
            await app(scope, receive, send)
        except Exception as exc:  # the same failure either way (a mount not started, say)
            return repr(exc)
        return ""

    failure = asyncio.run(call())
    if path == "/metrics" and method == "GET":  # the counters count these very requests
        sent = [{**m, "body": b"", "headers": None} for m in sent]
    return failure, [
        (m["type"], m.get("status"), _masked(m.get("headers")), _masked(m.get("body"))) for m in sent
    ]


def _masked(value: Any) -> Any:
    """Without the dashboard's sign-in nonces and cookie expiry dates (fresh at every page),
    nor the request id (fresh at every request)."""
    if isinstance(value, bytes):
        return _RANDOM.sub(b"<random>", value)
    return None if value is None else [(k, b"<id>" if k == b"x-request-id" else _masked(v)) for k, v in value]


def test_every_path_and_method_gets_the_routes_answer(world: World, handled: list[str]) -> None:
    """Every route of the app, with other methods, slashes added or taken off, unknown
    segments, mounts, with and without a token, and behind a `root_path`."""
    fast, plain = _apps(world)
    token = issue_tokens(world)["agent"]
    cases = [
        (m, p, t)
        for p in _paths(fast)
        for m in _METHODS
        for t in (None, token)
        if t is None or m in ("GET", "HEAD")
    ]
    for method, path, tok in cases:
        assert _request(fast, method, path, tok) == _request(plain, method, path, tok), (method, path)
    assert _request(fast, "GET", "/v1/me", token, "/behind") == _request(
        plain, "GET", "/v1/me", token, "/behind"
    )
    handled.clear()
    _request(fast, "GET", "/v1/me", token, "/behind")
    assert handled == []


def test_every_plain_operation_is_answered_by_the_path(world: World, handled: list[str]) -> None:
    """No operation of the table reaches FastAPI: raw bodies, streams and `async def` included."""
    fast, _ = _apps(world)
    token = issue_tokens(world)["admin"]
    for op in OPERATIONS.values():
        path = op.template.format(**dict.fromkeys(op.params, "x1"))
        handled.clear()
        _request(fast, op.method, path, token)
        assert handled == [], op.name


_BODIES: list[tuple[str, bytes]] = [
    ("application/json", b"{}"),
    ("application/json", b"null"),
    ("application/json", b"[]"),
    ("application/json", b"{not json"),
    ("application/json", b'{"x": 1}'),
    ("application/vnd.api+json", b"{}"),
    ("text/plain", b"{}"),
    ("", b"{}"),
]


_QUERIES = ("limit=0", "limit=abc", "limit=5&limit=7", "offset=-1", "prefix=" + "p" * 2000, "revision=x")


def test_any_body_to_any_operation_gets_the_routes_answer(world: World) -> None:
    """Odd bodies, content types and queries to every operation: the same answer."""
    fast, plain = _apps(world)
    token = issue_tokens(world)["admin"]
    for op in OPERATIONS.values():
        if op.name in ("stream_events", "metrics"):  # a stream does not end; counters count
            continue
        path = op.template.format(**dict.fromkeys(op.params, "x1"))
        for content_type, content in _BODIES:
            headers = {"Authorization": f"Bearer {token}"}
            if content_type:
                headers["Content-Type"] = content_type
            a, b = (
                _call(fast, path, headers, content, op.method),
                _call(plain, path, headers, content, op.method),
            )
            _same(a, b, f"{op.name} {content_type} {content!r}")
        for query in (
            "limit=0",
            "limit=abc",
            "limit=5&limit=7",
            "offset=-1",
            "prefix=" + "p" * 2000,
            "revision=x",
        ):
            headers = {"Authorization": f"Bearer {token}"}
            a, b = (
                _call(fast, f"{path}?{query}", headers, None, op.method),
                _call(plain, f"{path}?{query}", headers, None, op.method),
            )
            _same(a, b, f"{op.name} ?{query}")


def test_the_first_authorization_header_is_the_token_everywhere(world: World) -> None:
    """One parser of the bearer token: with two `Authorization` headers the first counts, on
    the path, on FastAPI's routes and before a body is read alike."""
    tokens = issue_tokens(world)
    att = world.coord.claim(world.agent, world.new_task().id, 60)
    fast, plain = _apps(world)
    good, bad = ("authorization", f"Bearer {tokens['agent']}"), ("authorization", "Bearer stl_nope")

    async def go(app: Any, method: str, path: str, headers: list[tuple[str, str]]) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://studiolo.test") as http:
            body = b"{}" if method == "POST" else None
            return await http.request(
                method, path, headers=[*headers, ("content-type", "application/json")], content=body
            )

    for method, path in (("GET", "/v1/me"), ("POST", f"/v1/attempts/{att.id}/heartbeat")):
        for headers, status in (([good, bad], 200), ([bad, good], 401)):
            answers = [asyncio.run(go(app, method, path, headers)) for app in (fast, plain)]
            assert [a.status_code for a in answers] == [status, status], (method, headers)
