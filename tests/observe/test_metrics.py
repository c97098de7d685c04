"""`GET /metrics` through prometheus_client: a tour's requests and completions counted and
timed by route template, names per the Prometheus conventions (read back by the client
library's own parser), and no caller able to mint a time series."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from studiolo.core.model import Event
from studiolo.faces.http.app import create_app
from studiolo.observe.install import StoreWatch
from studiolo.observe.metrics import Metrics
from studiolo.settings import Settings
from tests.faces.helpers import Actors, complete, in_process, new_task, submit, verify
from tests.world import World

_UNITS = ("_seconds", "_size", "_depth")  # histograms and gauges name what they measure


def _samples(text: str) -> dict[str, list[Sample]]:
    return {f.name: list(f.samples) for f in text_string_to_metric_families(text)}


def _tour(actors: Actors) -> str:
    """Claim, submit, verify, a rejected then an accepted then a replayed completion."""
    admin, agent, ver = actors.client("admin"), actors.client("agent"), actors.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    agent.heartbeat(attempt.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    try:
        complete(agent, task, attempt, cand, [], request_id="too-early")
    except Exception as exc:
        assert getattr(exc, "reason", None) == "evidence_missing"
    receipt = verify(ver, actors.world, cand)
    complete(agent, task, attempt, cand, [receipt.id])
    complete(agent, task, attempt, cand, [receipt.id])  # the same request again: a replay
    return task.id


def test_a_tour_is_counted_and_timed_by_route_template(actors: Actors) -> None:
    task_id = _tour(actors)
    text = actors.client("admin").metrics()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name, family in families.items():
        assert name.startswith("studiolo_"), name
        if name.endswith("_created"):  # the text format shows a counter's start time as a gauge
            assert name.removesuffix("_created") in families
        elif family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples), name
        else:
            assert name.endswith(_UNITS), (name, family.type)
    samples = _samples(text)
    counts = {
        (s.labels["method"], s.labels["route"], s.labels["status"]): s.value
        for s in samples["studiolo_http_requests"]
        if s.name.endswith("_total")
    }
    complete_route = ("POST", "/v1/tasks/{task_id}/complete")
    assert counts[(*complete_route, "409")] == 1  # evidence_missing
    assert counts[(*complete_route, "201")] == 1 and counts[(*complete_route, "200")] == 1
    assert counts[("POST", "/v1/tasks/{task_id}/attempts", "201")] == 1
    assert not any(task_id in route for _, route, _ in counts)  # a template, never the path
    latency = samples["studiolo_http_request_duration_seconds"]
    done = [s for s in latency if s.name.endswith("_count") and s.labels["route"] == complete_route[1]]
    assert sum(s.value for s in done) == 3
    completions = {
        (s.labels["outcome"], s.labels["reason"]): s.value
        for s in samples["studiolo_completions"]
        if s.name.endswith("_total")
    }
    assert completions == {("accepted", ""): 1, ("replayed", ""): 1, ("rejected", "evidence_missing"): 1}
    stages = {
        (s.labels["stage"], s.labels["outcome"]): s.value
        for s in samples["studiolo_completion_duration_seconds"]
        if s.name.endswith("_count")
    }
    for stage in ("door", "request"):
        assert stages[(stage, "accepted")] == stages[(stage, "replayed")] == stages[(stage, "rejected")] == 1
    beats = [s for s in samples["studiolo_heartbeat_batch_size"] if s.name.endswith("_count")]
    assert beats[0].value == 1
    receipts = {
        s.labels["result"]: s.value for s in samples["studiolo_receipts"] if s.name.endswith("_total")
    }
    assert receipts == {"pass": 1}
    groups = [s for s in samples["studiolo_group_commit_size"] if s.name.endswith("_count")]
    assert groups and groups[0].value >= 1  # SQLite: every write went through the group commit


def test_git_publication_lag_is_timed(world: World) -> None:
    app = create_app(world.coord, Settings(database_url=world.coord.store.url))
    assert app.state.projector is not None  # a SQLite ledger on a file publishes git next to it
    world.edit("src/a.txt", b"one")
    world.edit("src/b.txt", b"two")
    published = app.state.projector.run_once()  # the world's setup and the two edits
    assert published >= 2
    lag = _samples(app.state.metrics.render().decode())["studiolo_git_publication_lag_seconds"]
    assert [s.value for s in lag if s.name.endswith("_count")] == [published]


def test_event_counts_take_only_known_label_values(world: World) -> None:
    metrics = Metrics()
    watch = StoreWatch(metrics, None)

    def event(kind: str, **data: str) -> Event:
        return Event(1, "p", kind, None, "s", data, 0.0, "", "")

    watch.committed(
        [
            event("a2a.remote.delegated"),
            event("a2a.remote.state", dst="remote-working"),
            event("a2a.remote.state", dst="x" * 300),  # no such state: not a new series
            event("a2a.delegated"),
            event("receipt.recorded", result="pass"),
            event("receipt.recorded", result="made-up"),
        ]
    )
    samples = _samples(metrics.render().decode())
    states = {
        (s.labels["direction"], s.labels["state"]): s.value
        for s in samples["studiolo_a2a_delegation_transitions"]
        if s.name.endswith("_total")
    }
    assert states == {
        ("outbound", "delegated"): 1,
        ("outbound", "remote-working"): 1,
        ("outbound", "other"): 1,
        ("inbound", "delegated"): 1,
    }
    results = {s.labels["result"]: s.value for s in samples["studiolo_receipts"] if s.name.endswith("_total")}
    assert results == {"pass": 1, "other": 1}


def test_plain_starlette_routes_and_mounts_are_named_by_template(actors: Actors) -> None:
    paths = ["/openapi.json", "/git/nothing.git/info/refs", "/a2a/anything", "/ui/static/nothing.css"]
    with httpx.Client(base_url=actors.url, transport=actors.transport) as http:
        statuses = [http.get(p).status_code for p in paths]
        text = http.get("/metrics").text
    routes = {
        (s.labels["route"], s.labels["status"])
        for s in _samples(text)["studiolo_http_requests"]
        if s.name.endswith("_total")
    }
    expected = ["/openapi.json", "/git/{repo}/{rest:path}", "/a2a/…", "/ui/static/…"]
    assert {(r, str(c)) for r, c in zip(expected, statuses, strict=True)} <= routes, routes


def test_hostile_paths_and_methods_cannot_mint_series(actors: Actors) -> None:
    with httpx.Client(base_url=actors.url, transport=actors.transport) as http:
        for i in range(50):
            http.get(f"/no/such/{i}/path")
            http.request(f"BREW{i}", f"/v1/tasks/t{i}")
            http.get(f"/v1/tasks/t{i}/complete")  # a real template, the wrong method
        text = http.get("/metrics").text
    series = {
        (s.labels["method"], s.labels["route"], s.labels["status"])
        for s in _samples(text)["studiolo_http_requests"]
        if s.name.endswith("_total")
    }
    assert len(series) <= 5, series
    assert {m for m, _, _ in series} <= {"GET", "OTHER"}
    assert all("/t1" not in route and "/no/" not in route for _, route, _ in series), series


def test_metrics_off_counts_nothing(world: World) -> None:
    settings = Settings(database_url=world.coord.store.url, metrics=False)
    with in_process(world, settings) as actors:
        _tour(actors)
        text = actors.client("admin").metrics()
    values = [
        s.value for f in text_string_to_metric_families(text) for s in f.samples if "_created" not in s.name
    ]
    assert values and set(values) == {0.0}  # the unlabelled series, at zero; no labelled one


def test_verifier_queue_depth_and_check_durations(actors: Actors) -> None:
    """The queue counts a submitted candidate until a verifier answers it; the check's time
    (submission → receipt, authority clock) lands in the histogram under its result."""
    admin, agent, ver = actors.client("admin"), actors.client("agent"), actors.client("verifier")

    def depth() -> float:
        (sample,) = _samples(admin.metrics())["studiolo_verifier_queue_depth"]
        return sample.value

    assert depth() == 0
    attempt = agent.claim(new_task(admin).id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    assert depth() == 1
    actors.world.clock.advance(12.5)
    verify(ver, actors.world, cand)
    assert depth() == 0
    checks = _samples(admin.metrics())["studiolo_verifier_check_duration_seconds"]
    counts = {s.labels["result"]: s.value for s in checks if s.name.endswith("_count")}
    sums = {s.labels["result"]: s.value for s in checks if s.name.endswith("_sum")}
    assert counts == {"pass": 1} and sums["pass"] == pytest.approx(12.5)
    under_10 = [s for s in checks if s.name.endswith("_bucket") and s.labels["le"] == "10.0"]
    assert [s.value for s in under_10] == [0]


def test_the_queue_gauge_leaves_a_broken_ledger_out() -> None:
    metrics = Metrics()

    def broken() -> int:
        raise OSError("the ledger is down")

    metrics.watch_queue(broken)
    assert "studiolo_verifier_queue_depth" not in _samples(metrics.render().decode())
    metrics.watch_queue(lambda: 3)
    assert _samples(metrics.render().decode())["studiolo_verifier_queue_depth"][0].value == 3
