"""The task list's attention view, counts, search and policy filter (the dashboard's first
question: what is blocked?), on the story every dashboard test shares."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from studiolo._exceptions import InvalidRequest
from studiolo.core.facts import Fact
from studiolo.service.overview import Attention
from tests.faces.web.story import LONG_TITLE, tell
from tests.world import World, build_world


@pytest.fixture
def world(store_url: str, tmp_path: Path) -> Iterator[World]:
    """On SQLite and on PostgreSQL (the list is one batched read there)."""
    built = build_world(tmp_path, url=store_url)
    try:
        yield built
    finally:
        built.coord.store.dispose()


def _ids(world: World, **kw: object) -> set[str]:
    return {
        v.task.id for v in world.coord.task_list_page(world.admin, world.project_id, limit=500, **kw).views
    }


def test_each_fact_that_needs_attention_is_found(world: World) -> None:
    s = tell(world)
    page = world.coord.task_list_page(world.admin, world.project_id, attention="any", limit=500)
    marks = {task_id: set(found) for task_id, found in page.attention.items()}
    assert marks == {
        s.refused: {Attention.REFUSED},
        s.lapsed: {Attention.LEASE_EXPIRED},
        s.delegated: {Attention.INDETERMINATE},
        s.awaiting: {Attention.AWAITING_DEPLOYMENT},
    }
    assert page.tally.needing == 4 and page.selected == 4
    assert page.tally.attention == {a.value: 1 for a in Attention}
    for a in Attention:
        assert _ids(world, attention=a.value) == {t for t, m in marks.items() if a in m}


def test_counts_per_strongest_fact_and_totals(world: World) -> None:
    s = tell(world)
    page = world.coord.task_list_page(world.admin, world.project_id, limit=2)
    assert page.tally.total == 9 and len(page.views) == 2 and page.has_more
    facts = page.tally.facts
    assert facts[Fact.ACCEPTED.value] == 2 and facts[Fact.DEPLOYED.value] == 1  # awaiting, accepted; deployed
    assert facts[Fact.CANCELLED.value] == 1 and facts[Fact.VERIFIED.value] == 1  # the refused one
    assert sum(facts.values()) == 9
    assert _ids(world, fact="deployed") == {s.deployed}
    assert page.project_seq == world.coord.latest_events(world.admin, world.project_id, 1)[-1].seq


def test_search_by_title_or_id_and_by_pinned_policy(world: World) -> None:
    s = tell(world)
    assert _ids(world, query="DEPLOY") == {s.awaiting, s.deployed}
    assert _ids(world, query=s.refused) == {s.refused}
    assert _ids(world, query=s.refused[:10]) >= {s.refused}
    assert _ids(world, query=LONG_TITLE[100:140]) == {s.long}
    assert len(_ids(world, policy_version=1)) == 9 and not _ids(world, policy_version=2)
    page = world.coord.task_list_page(world.admin, world.project_id, query="deploy", attention="any")
    assert page.tally.total == 2 and page.selected == 1  # counts are over the search
    with pytest.raises(InvalidRequest):
        world.coord.task_list_page(world.admin, world.project_id, attention="bored")


def test_a_lease_that_runs_out_later_is_found_then(world: World) -> None:
    task = world.new_task()
    world.coord.claim(world.agent, task.id, lease_seconds=30)
    assert not _ids(world, attention="lease expired")
    world.clock.advance(31)
    assert _ids(world, attention="lease expired") == {task.id}
    assert world.coord.task_page(world.admin, task.id).attention == (Attention.LEASE_EXPIRED,)


def test_a_title_with_a_bidi_override_is_refused(world: World) -> None:
    with pytest.raises(InvalidRequest, match="bidirectional"):
        world.new_task("fix \u202etxt.exe")
    assert world.new_task("fix \u200fmarks are fine").title  # marks do not reorder; shown neutralized


def test_the_rows_are_reused_until_an_event_or_a_lapse(world: World) -> None:
    task = world.new_task()
    world.coord.claim(world.agent, task.id, lease_seconds=30)
    pid, admin = world.project_id, world.admin
    first = world.coord.task_list_page(admin, pid)
    snap = first.snapshot
    assert snap is not None and snap.valid_until == first.views[0].attempts[0].lease_deadline
    empty = replace(snap, rows=())  # reused rows are the snapshot's: none here
    assert world.coord.task_list_page(admin, pid, since=empty).tally.total == 0
    world.clock.advance(31)  # the lease ran out: no event, yet the rows are read again
    lapsed = world.coord.task_list_page(admin, pid, since=empty)
    assert lapsed.tally.total == 1 and lapsed.attention[task.id] == (Attention.LEASE_EXPIRED,)
    assert lapsed.snapshot is not None and lapsed.snapshot.valid_until == math.inf
    world.new_task("another")  # an event
    assert world.coord.task_list_page(admin, pid, since=replace(lapsed.snapshot, rows=())).tally.total == 2
    other = world.coord.create_project(admin, "other").id
    assert world.coord.task_list_page(admin, other, since=lapsed.snapshot).tally.total == 0
