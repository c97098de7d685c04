"""Issue 9: observations name an existing revision inside the observer's scope, and only an
observation made at or after the accepted commit establishes `deployed`."""

from __future__ import annotations

import pytest

from studiolo import InvalidRequest, NotAuthorized
from studiolo.core.facts import Fact
from tests.service.snapshot import snapshot
from tests.world import World


def test_observations_respect_the_observe_scope(world: World) -> None:
    pid = world.project_id
    ops = world.coord.add_principal(world.admin, pid, "ops", "observer").principal
    world.coord.grant(world.admin, pid, ops.id, ["read", "observe"], ["docs/**"])
    world.edit("docs/guide.md", b"# guide\n")
    before = snapshot(world.coord.store)
    with pytest.raises(NotAuthorized):
        world.coord.observe(ops, pid, "src/answer.txt", "deployed", revision=1)
    assert snapshot(world.coord.store) == before
    assert world.coord.observe(ops, pid, "docs/guide.md", "deployed", revision=1).target == "docs/guide.md"
    # listings honour the read scope too
    world.coord.observe(world.human, pid, "src/answer.txt", "healthy", revision=1)
    assert {o.target for o in world.coord.observations(ops, pid)} == {"docs/guide.md"}


def test_observations_name_an_existing_revision(world: World) -> None:
    pid = world.project_id
    digest = world.put(b"0\n")
    for kw in (
        {"revision": 5},
        {"digest": world.put(b"never published\n")},
        {"revision": 1, "digest": world.put(b"x")},
        {},
    ):
        with pytest.raises(InvalidRequest):
            world.coord.observe(world.human, pid, "src/answer.txt", "deployed", **kw)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        world.coord.observe(world.human, pid, "src/nothing.txt", "deployed", revision=1)
    assert world.coord.observe(world.human, pid, "src/answer.txt", "deployed", digest=digest).digest == digest


def test_deployed_needs_an_observation_after_the_commit(world: World) -> None:
    """Finding: an observation of a revision that did not exist yet made a later completion
    show `deployed` at once."""
    pid = world.project_id
    world.edit("src/answer.txt", b"42\n")  # revision 2: these bytes, deployed once before
    world.coord.observe(world.human, pid, "src/answer.txt", "deployed", digest=world.put(b"42\n"))
    world.edit("src/answer.txt", b"0\n")  # revision 3
    task = world.new_task(requires_deployment=True)
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"42\n"})
    receipt = world.receipt(cand)
    with pytest.raises(InvalidRequest):  # revision 4 does not exist yet
        world.coord.observe(world.human, pid, "src/answer.txt", "deployed", revision=4)
    world.clock.advance(5)
    world.complete(task, att, cand, [receipt.id])
    assert world.coord.task_view(world.admin, task.id).fact is Fact.ACCEPTED
    world.clock.advance(5)
    world.coord.observe(world.human, pid, "src/answer.txt", "deployed", revision=4)
    assert world.coord.task_view(world.admin, task.id).fact is Fact.DEPLOYED
