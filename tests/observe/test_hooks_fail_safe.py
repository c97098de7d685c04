"""An observer that fails never fails the work it watches: a store hook that raises leaves
every write committed and answered (also writes that shared a group commit), and a request
whose metrics or log line raise still gets its answer."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import httpx
import pytest

from studiolo.core.model import Event
from studiolo.store.hooks import StoreHooks
from tests.faces.helpers import Actors
from tests.world import World


class _Broken(StoreHooks):
    def __init__(self) -> None:
        self.calls = 0

    def committed(self, events: Sequence[Event]) -> None:
        self.calls += 1
        raise ValueError("I/O operation on closed file")

    def group_committed(self, size: int, waited: float) -> None:
        raise ValueError("broken")

    def retried(self) -> None:
        raise ValueError("broken")


def test_a_raising_store_hook_fails_no_write(world: World, caplog: pytest.LogCaptureFixture) -> None:
    broken = world.coord.store.hooks = _Broken()
    made: list[str] = []
    start = threading.Barrier(8)

    def write(i: int) -> None:
        start.wait()
        made.extend(world.new_task(f"t{i}.{k}").id for k in range(3))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(made) == 24 and broken.calls >= 24  # every write answered, every hook called
    events = world.coord.store.read(lambda tx: tx.audit.events(world.project_id, limit=10_000))
    assert set(made) <= {e.subject for e in events if e.kind == "task.created"}
    assert "a store hook failed" in caplog.text
    assert world.coord.verify_audit().ok


def test_a_raising_metrics_call_still_answers_the_request(actors: Actors) -> None:
    metrics = _metrics_of(actors)

    def broken(*args: object) -> None:
        raise RuntimeError("broken metrics")

    metrics.request = broken  # type: ignore[method-assign]
    with httpx.Client(base_url=actors.url, transport=actors.transport) as http:
        assert http.get("/healthz").status_code == 200


def _metrics_of(actors: Actors) -> object:
    transport = actors.transport
    app = transport._asgi.app  # type: ignore[union-attr]
    return app.state.metrics
