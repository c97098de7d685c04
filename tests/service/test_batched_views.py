"""A task's view is read in a batch (`Store.read(batched=True)`: on PostgreSQL, psycopg's
pipeline mode, the reads of each step sent together). On both back-ends, every state a
task can be in gives the facts the contract says, and the same view as one read sent
statement by statement."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from studiolo import CompletionRejected, NotFound
from studiolo.core.facts import Fact
from studiolo.service.views import TaskView
from studiolo.store import Tx
from tests.world import World, build_world


@pytest.fixture
def world(store_url: str, tmp_path: Path) -> Iterator[World]:
    built = build_world(tmp_path, url=store_url)
    try:
        yield built
    finally:
        built.coord.store.dispose()


def _unbatched(world: World, task_id: str) -> TaskView:
    """The view as a plain read transaction gives it (no pipeline)."""
    coord = world.coord

    def run(tx: Tx) -> TaskView:
        return coord.views.confined(
            tx, world.admin, coord.views.view_of(tx, coord.visible_task(tx, world.admin, task_id))
        )

    return coord.store.read(run)


def test_every_state_reads_the_same_batched(world: World) -> None:
    pid = world.project_id
    views: dict[str, tuple[str, Fact]] = {}

    views["open"] = (world.new_task().id, Fact.OPEN)

    claimed = world.new_task()
    world.coord.claim(world.agent, claimed.id, 60)
    views["claimed"] = (claimed.id, Fact.CLAIMED)

    lapsed = world.new_task()
    world.coord.claim(world.agent, lapsed.id, 1)
    views["lapsed"] = (lapsed.id, Fact.OPEN)

    prepared = world.new_task()
    world.candidate(world.coord.claim(world.agent, prepared.id, 600), {"src/a.txt": b"a\n"})
    views["prepared"] = (prepared.id, Fact.CANDIDATE_PREPARED)

    verified = world.new_task()
    att = world.coord.claim(world.agent, verified.id, 600)
    world.receipt(world.candidate(att, {"src/b.txt": b"b\n"}))
    views["verified"] = (verified.id, Fact.VERIFIED)

    failed = world.new_task()
    att = world.coord.claim(world.agent, failed.id, 600)
    world.receipt(world.candidate(att, {"src/c.txt": b"c\n"}), result="fail")
    views["failed receipt"] = (failed.id, Fact.CANDIDATE_PREPARED)

    accepted = world.new_task()
    att = world.coord.claim(world.agent, accepted.id, 600)
    cand = world.candidate(att, {"src/d.txt": b"d\n", "docs/d.md": b"# d\n"})
    with pytest.raises(CompletionRejected):  # a refusal is listed among the view's rejections
        world.complete(accepted, att, cand, [], request_id="too-early")
    world.complete(accepted, att, cand, [world.receipt(cand).id])
    views["accepted"] = (accepted.id, Fact.ACCEPTED)

    moved = world.new_task()
    att = world.coord.claim(world.agent, moved.id, 600)
    cand = world.candidate(att, {"src/e.txt": b"e\n"})
    world.complete(moved, att, cand, [world.receipt(cand).id])
    world.edit("src/e.txt", b"changed since\n")
    views["accepted, moved on"] = (moved.id, Fact.ACCEPTED)

    by_revision = world.new_task(requires_deployment=True)
    att = world.coord.claim(world.agent, by_revision.id, 600)
    cand = world.candidate(att, {"src/f.txt": b"f\n"})
    world.clock.advance(1)
    done = world.complete(by_revision, att, cand, [world.receipt(cand).id]).completion
    world.clock.advance(1)
    world.coord.observe(world.human, pid, "src/f.txt", "deployed", revision=done.revisions["src/f.txt"])
    views["deployed, by revision"] = (by_revision.id, Fact.DEPLOYED)

    world.edit("src/g.txt", b"g\n")  # these bytes once before: an old observation counts for nothing
    world.coord.observe(world.human, pid, "src/g.txt", "deployed", digest=world.put(b"g\n"))
    world.edit("src/g.txt", b"not g\n")
    by_digest = world.new_task(requires_deployment=True)
    att = world.coord.claim(world.agent, by_digest.id, 600)
    cand = world.candidate(att, {"src/g.txt": b"g\n", "src/h.txt": b"h\n"})
    world.clock.advance(1)
    world.complete(by_digest, att, cand, [world.receipt(cand).id])
    assert world.coord.task_view(world.admin, by_digest.id).fact is Fact.ACCEPTED
    world.clock.advance(1)
    world.coord.observe(world.human, pid, "src/g.txt", "deployed", digest=world.put(b"g\n"))
    assert world.coord.task_view(world.admin, by_digest.id).fact is Fact.ACCEPTED  # h.txt is not
    world.coord.observe(world.human, pid, "src/h.txt", "healthy", digest=world.put(b"h\n"))
    assert world.coord.task_view(world.admin, by_digest.id).fact is Fact.ACCEPTED  # not a deployment
    world.coord.observe(world.human, pid, "src/h.txt", "deployed", digest=world.put(b"h\n"))
    views["deployed, by digest"] = (by_digest.id, Fact.DEPLOYED)

    world.clock.advance(30)  # `lapsed` loses its lease; the 600 s ones keep theirs
    for label, (task_id, fact) in views.items():
        batched = world.coord.task_view(world.admin, task_id)
        assert batched.fact is fact, label
        assert batched == _unbatched(world, task_id), label
        assert world.coord.task_view(world.agent, task_id) == batched, label  # read scope "**"

    # a page of views reads every task's view in one batch: the same views, in creation order
    singles = [world.coord.task_view(world.admin, task_id) for task_id, _ in views.values()]
    listed = world.coord.list_task_views(world.admin, pid)
    assert sorted(listed, key=lambda v: v.task.id) == sorted(singles, key=lambda v: v.task.id)
    assert [v.task.id for v in listed] == [t.id for t in world.coord.list_tasks(world.admin, pid)]
    page = world.coord.task_list_page(world.admin, pid, limit=500)
    assert {v.task.id: v for v in page.views} == {v.task.id: replace(v, rejections=()) for v in singles}
    deployed = world.coord.task_list_page(world.admin, pid, fact="deployed").views
    assert {v.task.id for v in deployed} == {by_revision.id, by_digest.id}
    accepted_view = world.coord.task_view(world.admin, accepted.id)
    assert world.coord.task_page(world.admin, accepted.id).view == accepted_view
    assert [e.data["request_id"] for e in accepted_view.rejections] == ["too-early"]
    assert accepted_view.still_current is True and len(accepted_view.receipts) == 1
    assert world.coord.task_view(world.admin, moved.id).still_current is False
    assert world.coord.task_view(world.admin, views["open"][0]).still_current is None


def test_a_hidden_task_reads_as_missing_batched(world: World) -> None:
    task = world.new_task()
    stranger = world.coord.add_principal(world.admin, world.project_id, "stranger", "agent").principal
    for who, task_id in ((stranger, task.id), (world.agent, "tsk_" + "0" * 26)):
        with pytest.raises(NotFound) as raised:
            world.coord.task_view(who, task_id)
        assert raised.value.reason == "task_not_found"
    world.coord.grant(world.admin, world.project_id, stranger.id, ["read"], ["**"])
    assert world.coord.task_view(stranger, task.id).task.id == task.id
    # the read left its connection fit for the next one, pipeline or not
    assert world.coord.task_view(world.agent, task.id) == _unbatched(world, task.id)


def test_orientation_lists_the_callers_current_attempts(world: World) -> None:
    """`orient`'s attempts come from one read, not one per claimed task: the caller's current
    attempts of claimed tasks, in the tasks' order; not a reassigned, finished or other's one."""
    tasks = []
    for n in range(6):
        tasks.append(world.new_task(f"task {n}"))
        world.clock.advance(1)  # the tasks' order is their creation's
    held = [world.coord.claim(world.agent, t.id, 600) for t in tasks[:4]]
    world.coord.claim(world.agent2, tasks[4].id, 600)
    world.coord.reassign(world.admin, tasks[1].id, world.agent2.id)  # no longer the agent's
    cand = world.candidate(held[2], {"src/o.txt": b"o\n"})
    world.complete(tasks[2], held[2], cand, [world.receipt(cand).id])  # finished
    mine = world.coord.orient(world.agent, world.project_id).my_attempts
    assert [a.id for a in mine] == [held[0].id, held[3].id]
    theirs = world.coord.orient(world.agent2, world.project_id).my_attempts
    assert [a.task_id for a in theirs] == [tasks[1].id, tasks[4].id]
    assert [t.id for t in world.coord.orient(world.agent, world.project_id).open_tasks] == [tasks[5].id]
