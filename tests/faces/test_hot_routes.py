"""The fast lanes (`faces/http/hot.py`: heartbeats, completions) answer exactly as the FastAPI
routes: the same status, headers that matter and body, for well-formed and hostile requests.
Each request goes to the app with the lane and to one without it, over the same ledger at
the same (manual) clock."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from studiolo.faces.http import hot
from studiolo.faces.http.app import create_app
from studiolo.settings import Settings
from tests.faces.helpers import issue_tokens
from tests.world import World


def _apps(world: World) -> tuple[Any, Any]:
    settings = Settings(database_url=world.coord.store.url)
    fast, plain = create_app(world.coord, settings), create_app(world.coord, settings)
    plain.user_middleware = [m for m in plain.user_middleware if m.cls is not hot.HotRoutes]
    return fast, plain


def _call(
    app: Any, path: str, headers: dict[str, str], content: bytes | None, method: str = "POST"
) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://studiolo.test") as http:
            return await http.request(method, path, headers=headers, content=content)

    return asyncio.run(go())


def test_the_fast_lane_answers_as_the_route(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = issue_tokens(world)
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    other = world.coord.claim(world.agent2, world.new_task("other").id, 60)
    fast, plain = _apps(world)
    laned: list[str] = []
    original = hot.LeaseLane.beat

    async def counted(self: hot.LeaseLane, *args: Any) -> Any:
        laned.append(args[2])
        return await original(self, *args)

    monkeypatch.setattr(hot.LeaseLane, "beat", counted)
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
        a, b = _call(fast, path, headers, body), _call(plain, path, headers, body)
        where = f"{attempt_id} {headers.get('Content-Type')} {body!r}"
        assert (a.status_code, a.headers.get("content-type")) == (
            b.status_code,
            b.headers.get("content-type"),
        ), where
        assert json.loads(a.content) == json.loads(b.content), where
        assert a.headers.get("www-authenticate") == b.headers.get("www-authenticate"), where
    # the well-formed ones with a token took the lane (an unknown token's 401 included); the
    # rest went to the route
    assert len(laned) == 10
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


def test_the_completion_lane_answers_as_the_route(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every byte the same, refusals and replays included; metrics count as the route's do."""
    tokens = issue_tokens(world)
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/a.txt": b"done"})
    good = world.receipt(cand)
    failing = world.receipt(world.candidate(att, {"src/a.txt": b"no"}), result="fail")
    fast, plain = _apps(world)
    laned: list[str] = []
    original = hot.HotRoutes._complete

    def counted(self: hot.HotRoutes, principal: Any, token: str, task_id: str, body: Any) -> Any:
        laned.append(task_id)
        return original(self, principal, token, task_id, body)

    monkeypatch.setattr(hot.HotRoutes, "_complete", counted)
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
        (task.id, agent, raw(request_id="x" * 5000)),  # larger than a lane takes
        (task.id, {**agent, "Content-Type": "text/plain"}, raw()),
        (task.id, js, raw()),  # no token
        (task.id, {"Authorization": "Bearer stl_nope", **js}, raw()),
        (task.id, {"Authorization": "Basic abc", **js}, raw()),
    ]
    for task_id, headers, content in refusals:
        path = f"/v1/tasks/{task_id}/complete"
        a, b = _call(fast, path, headers, content), _call(plain, path, headers, content)
        _same(a, b, f"{task_id} {headers} {content!r}")
        assert a.status_code >= 400, content
    taken = len(laned)
    # The same, accepted, then replayed by either app: the replays are byte for byte alike.
    path = f"/v1/tasks/{task.id}/complete"
    accepted = _call(fast, path, agent, raw())
    assert accepted.status_code == 201 and accepted.headers["idempotent-replay"] == "false"
    again, plain_again = _call(fast, path, agent, raw()), _call(plain, path, agent, raw())
    _same(again, plain_again, "replay")
    assert again.status_code == 200 and again.headers["idempotent-replay"] == "true"
    assert again.json() == accepted.json()
    assert len(laned) == taken + 2
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


def test_the_task_lane_answers_as_the_route(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = issue_tokens(world)
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    world.receipt(world.candidate(att, {"src/a.txt": b"done"}))
    from tests.world import add_project

    elsewhere = add_project(world.coord, world.admin, world.clock, "elsewhere").new_task()
    fast, plain = _apps(world)
    laned: list[str] = []
    original = hot.HotRoutes._task

    def counted(self: hot.HotRoutes, principal: Any, token: str, task_id: str) -> Any:
        laned.append(task_id)
        return original(self, principal, token, task_id)

    monkeypatch.setattr(hot.HotRoutes, "_task", counted)
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
        ("GET", task.id, {**agent, "Content-Type": "application/json"}, b"{}"),  # a body: the route
        ("HEAD", task.id, agent, None),
        ("DELETE", task.id, agent, None),
    ]
    for method, task_id, headers, content in cases:
        path = f"/v1/tasks/{task_id}"
        a, b = _call(fast, path, headers, content, method), _call(plain, path, headers, content, method)
        _same(a, b, f"{method} {task_id} {headers} {content!r}")
    assert len(laned) == 9  # the GETs with a token and no body
    shown = _call(fast, f"/v1/tasks/{task.id}", agent, None, "GET").json()
    assert shown["task"]["id"] == task.id and len(shown["receipts"]) == 1


def test_no_other_route_answers_a_lane_path(world: World) -> None:
    """A lane serves its path for its method alone: no other route of the app may match it
    (a new route such as `GET /v1/tasks/ready` would be shadowed by the task lane)."""
    from studiolo.faces.http.dispatch import _entries

    app, _ = _apps(world)
    lanes = {("POST", "/v1/attempts/{attempt_id}/heartbeat"), ("POST", "/v1/tasks/{task_id}/complete")}
    lanes.add(("GET", "/v1/tasks/{task_id}"))
    served = set()
    routes = [e.api_route or e.route for e in _entries(app.router)]  # included routers flattened
    assert len(routes) > 50
    for route in routes:
        path, methods = getattr(route, "path", ""), getattr(route, "methods", None) or {"GET", "POST"}
        example = re.sub(r"{[^}]+}", "x", path)
        for method in methods:
            for lane_method, pattern, *_ in hot._LANES:
                if method == lane_method and pattern.fullmatch(example):
                    assert (method, path) in lanes, (method, path)
                    served.add((method, path))
    assert served == lanes


def _metric_lines(app: Any) -> list[str]:
    return app.state.metrics.render().decode().splitlines()  # type: ignore[no-any-return]


def test_the_lane_writes_queued_heartbeats_together(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """While one batch is being written, the heartbeats that arrive wait and go in the next
    one, together; each gets its own answer, a refused one included."""
    attempts = [world.coord.claim(world.agent, world.new_task(f"t{i}").id, 60) for i in range(5)]
    lane = hot.LeaseLane(world.coord)
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
    lane = hot.LeaseLane(world.coord, window=1.0)
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
    lane = hot.LeaseLane(world.coord, idle=0.05)
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
    the lane's answer is the route's, byte for byte, whichever of them took the request."""
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


def test_a_lane_refuses_a_token_revoked_after_it_was_cached(world: World) -> None:
    """The lanes authenticate through the same cache as the routes: a revocation ends a token
    on the very next request, on every lane, with the route's 401."""
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
