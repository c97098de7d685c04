"""Blob garbage collection: a service admin deletes the old blobs nothing references."""

from __future__ import annotations

import pytest

from studiolo._exceptions import InvalidRequest, NotAuthorized, NotFound
from tests.world import World


def _readable(world: World, digest: str) -> bool:
    try:
        world.coord.get_blob(world.admin, digest)
    except NotFound:
        return False
    return True


def test_collect_deletes_old_unreferenced_blobs_and_keeps_the_rest(world: World) -> None:
    c = world.coord
    orphan = world.put(b"staged two hours ago, never used")
    restaged = world.put(b"staged two hours ago, staged again now")
    world.edit("docs/kept.md", b"kept by an artifact revision")
    kept_by_artifact = c.read_artifact(world.admin, world.project_id, "docs/kept.md").artifact.digest
    attempt = c.claim(world.agent, world.new_task().id)
    cand = world.candidate(attempt, {"src/kept.py": b"kept by a candidate"})
    world.clock.advance(7200)
    young = world.put(b"staged a minute ago, for a candidate in flight")
    assert world.put(b"staged two hours ago, staged again now") == restaged

    assert c.collect_garbage(world.admin) == 1
    assert not _readable(world, orphan)
    for digest in (restaged, young, kept_by_artifact, cand.files["src/kept.py"]):
        assert digest is not None and _readable(world, digest), digest
    assert c.collect_garbage(world.admin) == 0

    events = c.store.read(lambda tx: list(tx.audit.iter_all()))
    collected = [e for e in events if e.kind == "blobs.collected"]
    assert [(e.project_id, e.actor, e.data["count"]) for e in collected] == [
        (None, world.admin.id, 1),
        (None, world.admin.id, 0),
    ]
    assert c.verify_audit().ok


def test_only_a_service_admin_collects(world: World) -> None:
    orphan = world.put(b"nobody's")
    world.clock.advance(7200)
    with pytest.raises(NotAuthorized):
        world.coord.collect_garbage(world.agent)
    with pytest.raises(InvalidRequest):
        world.coord.collect_garbage(world.admin, older_than=float("nan"))
    assert _readable(world, orphan)
