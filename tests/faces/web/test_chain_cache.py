"""The Activity page's chain status: walked whole at most once per interval, otherwise only
the events appended since the last verified head — and still authorized on every load."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from starlette.testclient import TestClient

from studiolo._exceptions import NotFound
from studiolo.faces.http.app import create_app
from studiolo.faces.web.chain import ChainCache
from studiolo.settings import Settings
from studiolo.store import schema
from tests.faces.helpers import issue_tokens
from tests.faces.web.conftest import sign_in
from tests.world import World


def _alter(world: World, seq: int) -> None:
    """Edit one event's data behind the ledger's back, as an attacker with the file would."""
    with world.coord.store.engine.begin() as conn:
        conn.execute(update(schema.events).where(schema.events.c.seq == seq).values(data='{"forged": 1}'))


def test_verify_audit_since_reads_only_the_events_after_it(world: World) -> None:
    coord = world.coord
    first = coord.verify_audit()
    assert first.ok
    world.new_task()  # appends events
    whole = coord.verify_audit()
    assert coord.verify_audit(since=first) == whole and whole.events > first.events
    _alter(world, 2)  # inside the prefix already verified: only a whole walk sees it
    assert coord.verify_audit(since=whole).ok
    assert coord.verify_audit().first_bad_seq == 2
    _alter(world, whole.events)  # inside the suffix: seen from `first` on
    report = coord.verify_audit(since=first)
    assert not report.ok and report.first_bad_seq == whole.events


def test_the_cache_walks_whole_once_per_interval(world: World) -> None:
    now = [0.0]
    cache = ChainCache(whole_every=60.0, clock=lambda: now[0])
    coord, admin, pid = world.coord, world.admin, world.project_id
    assert cache.status(coord, admin, pid).ok
    _alter(world, 2)
    world.new_task()
    now[0] = 59.0
    quick = cache.status(coord, admin, pid)  # the new events only: they verify
    assert quick.ok and quick.events == coord.verify_audit(since=quick).events
    now[0] = 60.0
    walked = cache.status(coord, admin, pid)
    assert not walked.ok and walked.first_bad_seq == 2
    now[0] = 61.0  # a broken chain is walked whole on every load: it never looks healed
    assert cache.status(coord, admin, pid).first_bad_seq == 2


def test_the_cache_still_asks_the_door_who_may_read(world: World) -> None:
    cache = ChainCache(whole_every=3600.0)
    coord, admin = world.coord, world.admin
    assert cache.status(coord, admin, world.project_id).ok
    other = coord.create_project(admin, "elsewhere")
    outsider = coord.add_principal(admin, other.id, "outsider", "human").principal
    with pytest.raises(NotFound):
        cache.status(coord, outsider, world.project_id)


def test_the_page_does_not_tell_one_projects_reader_the_services_event_count(world: World) -> None:
    token = issue_tokens(world)["human"]
    with TestClient(create_app(world.coord, Settings(database_url=world.coord.store.url))) as web:
        sign_in(web, token)
        page = web.get(f"/ui/projects/{world.project_id}/chain")
        report = world.coord.verify_audit()  # sign-in wrote no event: the count the page saw
    assert page.status_code == 200 and "Verified" in page.text and report.head in page.text
    assert f">{report.events}" not in page.text and f" {report.events} " not in page.text
