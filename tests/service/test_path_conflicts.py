"""No path is both a file and a directory (issue 32, finding 3): a writer did
`PUT src/input.txt/x` while `src/input.txt` was a file, and every later candidate tree of the
project failed to build. Each edit, candidate and publication that would make a path both
is refused with `path_conflict` and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo import CompletionRejected, Conflict
from studiolo.service import CandidateDraft
from tests.service.snapshot import snapshot
from tests.world import FakeClock, World, build_world


@pytest.fixture
def world(tmp_path: Path, clock: FakeClock, store_url: str) -> Iterator[World]:
    """Every case on SQLite and on PostgreSQL (the statements differ in their plans)."""
    built = build_world(tmp_path, clock, url=store_url)
    try:
        yield built
    finally:
        built.coord.store.dispose()


def _refused_edit(world: World, path: str, data: bytes | None = b"x\n") -> Conflict:
    digest = world.put(data) if data is not None else None
    rev = world.coord.read_revision(world.admin, world.project_id, path)
    before = snapshot(world.coord.store)
    with pytest.raises(Conflict) as err:
        world.coord.edit_artifact(world.human, world.project_id, path, digest, rev)
    assert err.value.reason == "path_conflict", err.value.to_dict()
    assert snapshot(world.coord.store) == before
    return err.value


def test_a_file_cannot_become_a_directory_by_an_edit(world: World) -> None:
    err = _refused_edit(world, "src/input.txt/x")
    assert "src/input.txt" in err.detail
    _refused_edit(world, "src/input.txt/deeper/still/x")


def test_a_directory_cannot_become_a_file_by_an_edit(world: World) -> None:
    _refused_edit(world, "src")
    world.edit("docs/a/b/c.md", b"c\n")
    _refused_edit(world, "docs/a")
    _refused_edit(world, "docs/a/b")


def test_deleting_one_side_first_makes_the_other_possible(world: World) -> None:
    world.edit("src/input.txt", None)
    assert world.edit("src/input.txt/x", b"now a directory\n") >= 1
    _refused_edit(world, "src/input.txt")  # a tombstone with files under it: still a directory
    world.edit("src/input.txt/x", None)
    assert world.edit("src/input.txt", b"a file again\n") == 3


def test_a_directory_with_several_files_is_one_until_every_one_is_deleted(world: World) -> None:
    for name in ("a", "b", "c"):
        world.edit(f"docs/d/{name}.md", b"x\n")
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    some = {"docs/d/a.md": None, "docs/d/b.md": None, "docs/d": b"a file\n"}
    with pytest.raises(Conflict) as err:
        world.candidate(att, some)
    assert err.value.reason == "path_conflict" and "docs/d/c.md" in err.value.detail
    every = {**some, "docs/d/c.md": None}
    cand = world.candidate(att, every)
    world.complete(task, att, cand, [world.receipt(cand).id])
    assert world.coord.read_revision(world.admin, world.project_id, "docs/d") == 1


def test_a_candidate_may_turn_a_file_into_a_directory_by_deleting_it(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/input.txt": None, "src/input.txt/x": b"21\n"})
    out = world.complete(task, att, cand, [world.receipt(cand).id])
    assert out.completion.receipt["revisions"] == {"src/input.txt": 2, "src/input.txt/x": 1}


@pytest.mark.parametrize(
    "files",
    [
        {"src/input.txt/x": b"under a current file\n"},
        {"src/new": b"file\n", "src/new/x": b"and a directory\n"},  # within the candidate itself
        {"src": b"over the directory of every file\n"},
    ],
)
def test_a_conflicting_candidate_is_refused_at_submission(world: World, files: dict[str, bytes]) -> None:
    task = world.new_task(scope=["**"])
    world.coord.grant(world.admin, world.project_id, world.agent.id, ["write", "complete"], ["**"])
    att = world.coord.claim(world.agent, task.id, 60)
    digests: dict[str, str | None] = {p: world.put(b) for p, b in files.items()}
    draft = CandidateDraft(digests, dict.fromkeys(files, 0), {}, {})
    before = snapshot(world.coord.store)
    with pytest.raises(Conflict) as err:
        world.coord.submit_candidate(world.agent, att.id, draft)
    assert err.value.reason == "path_conflict"
    assert snapshot(world.coord.store) == before
    assert world.coord.verification_queue(world.verifier, world.project_id) == []


def test_the_completion_refuses_a_tree_that_moved_under_the_candidate(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/out/report.txt": b"ok\n"})
    receipt = world.receipt(cand)
    world.edit("src/out", b"another writer's file\n")
    with pytest.raises(CompletionRejected) as err:
        world.complete(task, att, cand, [receipt.id])
    assert err.value.failed == ("path_conflict",)
    world.edit("src/out", None)
    assert world.complete(task, att, cand, [receipt.id]).completion.receipt["revisions"] == {
        "src/out/report.txt": 1
    }


def test_the_refusal_does_not_name_a_path_the_caller_may_not_read(world: World) -> None:
    world.edit("secret/plan.md", b"x\n")
    writer = world.coord.add_principal(world.admin, world.project_id, "narrow", "human").principal
    world.coord.grant(world.admin, world.project_id, writer.id, ["read", "write"], ["secret"])
    digest = world.put(b"y\n")
    with pytest.raises(Conflict) as err:
        world.coord.edit_artifact(writer, world.project_id, "secret", digest, 0)
    assert err.value.reason == "path_conflict" and "plan.md" not in err.value.detail
