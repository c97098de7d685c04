"""`door.heartbeats`: many heartbeats written together, each answered as `heartbeat` alone
would answer it. A refused one writes nothing and does not spoil the others; on PostgreSQL
they are written per project gate, on SQLite in one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studiolo._exceptions import Conflict, InvalidRequest, NotFound, StudioloError
from studiolo.core.model import Attempt
from tests.world import FakeClock, World, add_project, build_world


@pytest.fixture
def twin(store_url: str, tmp_path: Path) -> Iterator[tuple[World, World]]:
    """Two projects in one ledger (so PostgreSQL writes under two gates)."""
    first = build_world(tmp_path, FakeClock(), store_url)
    try:
        yield first, add_project(first.coord, first.admin, first.clock, "other")
    finally:
        first.coord.store.dispose()


def _deadline(w: World, attempt_id: str) -> float:
    found = w.coord.store.read(lambda tx: tx.work.attempt(attempt_id))
    assert found is not None
    return found.lease_deadline


def test_a_batch_answers_each_heartbeat_as_alone(twin: tuple[World, World]) -> None:
    a, b = twin
    mine = a.coord.claim(a.agent, a.new_task("mine").id, 30)
    theirs = a.coord.claim(a.agent2, a.new_task("theirs").id, 30)
    elsewhere = b.coord.claim(b.agent, b.new_task("elsewhere").id, 30)
    lapsed = a.coord.claim(a.agent, a.new_task("lapsed").id, 5)
    a.clock.advance(10)  # `lapsed` is past its deadline; the others are live
    before = {x.id: _deadline(a, x.id) for x in (mine, theirs, elsewhere, lapsed)}
    beats: list[tuple[Any, str, float | None]] = [
        (a.agent, mine.id, 60),
        (a.agent, theirs.id, 60),  # another principal's attempt
        (b.agent, elsewhere.id, None),  # another project, the default lease
        (a.agent, lapsed.id, 60),
        (a.agent, "att_doesnotexist00", 60),
        (a.agent, "not-an-id", 60),
        (a.agent, mine.id, 0.5),  # under the minimum lease
        (a.agent, mine.id, 90),  # the same attempt twice in one batch: the later one stands
    ]
    out = a.coord.heartbeats(beats)
    assert len(out) == len(beats)
    ok = [o for o in out if isinstance(o, Attempt)]
    assert [o.id for o in ok] == [mine.id, elsewhere.id, mine.id]
    assert out[0].lease_deadline == pytest.approx(a.clock() + 60)  # type: ignore[union-attr]
    kinds = [(type(o).__name__, getattr(o, "reason", None)) for o in out]
    assert kinds[1] == ("Conflict", "caller_not_attempt_owner")
    assert kinds[3] == ("Conflict", "attempt_not_active")
    assert isinstance(out[4], NotFound)
    assert isinstance(out[5], InvalidRequest) and isinstance(out[6], InvalidRequest)
    assert _deadline(a, mine.id) == pytest.approx(a.clock() + 90)
    assert _deadline(a, elsewhere.id) > before[elsewhere.id]
    assert _deadline(a, theirs.id) == before[theirs.id]  # refused: nothing written
    assert _deadline(a, lapsed.id) == before[lapsed.id]
    for i, (who, attempt_id, seconds) in enumerate(beats):  # each as `heartbeat` answers alone
        alone: Any
        try:
            alone = a.coord.heartbeat(who, attempt_id, seconds)
        except StudioloError as exc:
            alone = exc
        assert type(alone) is type(out[i]), i
        if isinstance(alone, Conflict):
            assert alone.reason == out[i].reason  # type: ignore[union-attr]


def test_an_empty_batch_writes_nothing(twin: tuple[World, World]) -> None:
    a, _ = twin
    assert a.coord.heartbeats([]) == []
