"""Event streams of one project share one reader (`faces/http/feed.py`): each follower still
gets every event in order exactly once, withheld as its own read scope says, catches up on
its own when it starts (or falls) behind the buffer, and ends at the next poll after a
revocation."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from studiolo.faces.http.feed import Feeds
from studiolo.faces.http.routes.events import _Follower
from studiolo.service import Coordinator
from tests.world import World, add_project, build_world

POLL = 0.02


def _counting(door: Coordinator, calls: Counter[str]) -> None:
    for name in ("event_feed", "events"):
        original = getattr(door, name)

        def counted(*args: Any, _f: Any = original, _n: str = name, **kw: Any) -> Any:
            calls[_n] += 1
            return _f(*args, **kw)

        setattr(door, name, counted)


async def _collect(follower: _Follower, seconds: float, out: list[dict[str, Any]]) -> None:
    async for text in follower.follow(time.monotonic() + seconds):
        if text.startswith("id: ") or text.startswith("event: error"):
            lines = text.strip().split("\n")
            data = json.loads(lines[-1].removeprefix("data: "))
            out.append(data)


def _world(tmp_path: Path) -> tuple[World, str, str]:
    w = build_world(tmp_path, clock=time.time)
    narrow = w.coord.add_principal(w.admin, w.project_id, "docs-reader", "observer")
    grant = w.coord.grant(w.admin, w.project_id, narrow.principal.id, ["read"], ["docs/**"])
    return w, narrow.token, grant.id


def test_followers_share_one_reader_and_each_sees_its_own_view(tmp_path: Path) -> None:
    w, narrow_token, _ = _world(tmp_path)
    admin_token = w.coord.rotate_token(w.admin, w.admin.id).token
    for i in range(30):  # history before anyone follows: read alone, then joined to the feed
        w.edit("src/input.txt" if i % 2 else "docs/a.md", f"{i}".encode())
    calls: Counter[str] = Counter()
    _counting(w.coord, calls)
    feeds = Feeds(w.coord, POLL, keep=8)
    full: list[list[dict[str, Any]]] = [[] for _ in range(10)]
    narrow: list[dict[str, Any]] = []
    elapsed: list[float] = []

    async def scenario() -> None:
        def follower(token: str, after: int) -> _Follower:
            caller = w.coord.authenticate(token)
            feed = feeds.join(w.project_id)
            return _Follower(w.coord, token, feed, w.coord.event_access(caller, w.project_id), after)

        started = time.monotonic()
        outs = [*full, narrow]
        tokens = [admin_token] * len(full) + [narrow_token]
        jobs = [
            asyncio.create_task(_collect(follower(t, 0), 60.0, o)) for t, o in zip(tokens, outs, strict=True)
        ]
        for i in range(40):  # more than the buffer keeps between two polls, at times
            await asyncio.to_thread(w.edit, "src/answer.txt" if i % 3 else "docs/b.md", f"{i}".encode())
            await asyncio.sleep(0.01)
        last = w.coord.events(w.admin, w.project_id, 0, 1000)[-1].seq
        # followers end when they have the last event (or at their deadline, and the test fails):
        # how long that takes depends on the machine's load, which a fixed window got wrong
        while any(not o or o[-1]["seq"] < last for o in outs) and not all(j.done() for j in jobs):
            await asyncio.sleep(POLL)
        await asyncio.sleep(5 * POLL)  # nothing more, nothing twice, arrives after the last
        elapsed.append(time.monotonic() - started)
        for j in jobs:
            j.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)

    asyncio.run(scenario())
    ledger = w.coord.events(w.admin, w.project_id, 0, 1000)
    for out in full:
        assert [e["seq"] for e in out] == [e.seq for e in ledger]  # all, in order, once each
    assert [e["seq"] for e in narrow] == [e.seq for e in ledger]
    by_seq = {e.seq: e for e in ledger}
    for e in narrow:
        subject = by_seq[e["seq"]].subject or ""
        assert (e["kind"] == "withheld") == subject.startswith("src/"), e
    # one feed read per poll for everyone; own reads only to start or catch up
    assert calls["event_feed"] <= elapsed[0] / POLL + 5
    assert calls["events"] < 11 * 8


def test_followers_of_several_projects_share_one_read_per_poll(tmp_path: Path) -> None:
    """Three projects, three followers each, one project followed only from mid-run: every
    follower gets its own project's events, all, in order, once; the process reads once a
    poll for all of them, not once per project."""
    w = build_world(tmp_path, clock=time.time)
    worlds = [w, *(add_project(w.coord, w.admin, time.time, name) for name in ("second", "third"))]
    token = w.coord.rotate_token(w.admin, w.admin.id).token
    calls: Counter[str] = Counter()
    _counting(w.coord, calls)
    feeds = Feeds(w.coord, POLL)
    seen: dict[str, list[list[dict[str, Any]]]] = {x.project_id: [[] for _ in range(3)] for x in worlds}

    async def scenario() -> None:
        async def follow(project_id: str, out: list[dict[str, Any]], delay: float) -> None:
            await asyncio.sleep(delay)
            feed = feeds.join(project_id)
            access = w.coord.event_access(w.coord.authenticate(token), project_id)
            try:
                await _collect(_Follower(w.coord, token, feed, access, 0), 2.0 - delay, out)
            finally:
                feeds.leave(feed)

        jobs = [
            follow(x.project_id, out, 0.5 if x is worlds[2] else 0.0)
            for x in worlds
            for out in seen[x.project_id]
        ]

        async def write() -> None:
            for i in range(30):
                x = worlds[i % 3]
                await asyncio.to_thread(x.edit, "src/answer.txt", f"{i}".encode())
                await asyncio.sleep(0.02)

        await asyncio.gather(write(), *jobs)

    asyncio.run(scenario())
    for x in worlds:
        ledger = [e.seq for e in w.coord.events(w.admin, x.project_id, 0, 1000)]
        assert len(ledger) > 10
        for out in seen[x.project_id]:
            assert [e["seq"] for e in out] == ledger  # all, in order, once each; none of another project
    assert calls["event_feed"] <= 2.0 / POLL + 5  # one read a poll, whatever the projects
    assert len(feeds) == 0


def test_a_revocation_ends_a_follower_at_the_next_poll(tmp_path: Path) -> None:
    w, narrow_token, grant_id = _world(tmp_path)
    feeds = Feeds(w.coord, POLL)
    out: list[dict[str, Any]] = []

    async def scenario() -> float:
        caller = w.coord.authenticate(narrow_token)
        feed = feeds.join(w.project_id)
        follower = _Follower(w.coord, narrow_token, feed, w.coord.event_access(caller, w.project_id), 0)
        task = asyncio.create_task(_collect(follower, 10.0, out))
        await asyncio.sleep(0.3)
        await asyncio.to_thread(w.coord.revoke_grant, w.admin, grant_id)
        revoked = time.monotonic()
        await task
        return time.monotonic() - revoked

    seconds = asyncio.run(scenario())
    assert out and out[-1]["reason"] == "not_found"  # its only grant: the project is gone for it
    assert seconds < 2  # ended by the revocation, not by the 10 s deadline
