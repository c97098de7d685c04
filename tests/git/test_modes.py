"""An artifact revision's mode: set by a direct edit (kept by one that names none) and by a
completion, which gives each path the mode its candidate says; the candidate digest binds
the mode, so a receipt for the bytes at 100644 does not cover them at 100755 (on both
back-ends)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo._exceptions import CompletionRejected, InvalidRequest
from studiolo.core.model import FileMode
from tests.world import FakeClock, World, build_world


@pytest.fixture
def w(tmp_path: Path, store_url: str) -> Iterator[World]:
    """A world on each back-end, its store closed after the test."""
    world = build_world(tmp_path, FakeClock(), store_url)
    yield world
    world.coord.store.dispose()


def test_a_mode_is_set_by_an_edit_and_by_a_completion(w: World) -> None:
    c, pid = w.coord, w.project_id
    assert c.read_artifact(w.admin, pid, "src/input.txt").artifact.mode is FileMode.REGULAR
    run = w.put(b"#!/bin/sh\necho hi\n")
    art = c.edit_artifact(w.human, pid, "src/run.sh", run, 0, FileMode.EXECUTABLE)
    assert art.mode is FileMode.EXECUTABLE
    task = w.new_task()
    attempt = c.claim(w.agent, task.id)
    files = {"src/run.sh": b"#!/bin/sh\necho bye\n", "src/new.txt": b"new\n", "src/tool": b"#!\n"}
    cand = w.candidate(
        attempt, files, modes={"src/run.sh": FileMode.EXECUTABLE, "src/tool": FileMode.EXECUTABLE}
    )
    w.complete(task, attempt, cand, [w.receipt(cand).id])
    arts = {a.path: a for a in c.list_artifacts(w.admin, pid)}
    assert arts["src/run.sh"].mode is FileMode.EXECUTABLE
    assert arts["src/run.sh"].revision == 2
    assert arts["src/tool"].mode is FileMode.EXECUTABLE
    assert arts["src/new.txt"].mode is FileMode.REGULAR
    history = w.coord.store.read(lambda tx: tx.content.history(pid, "src/run.sh"))
    assert [h["mode"] for h in history] == [FileMode.EXECUTABLE, FileMode.EXECUTABLE]
    w.edit("src/run.sh", b"plain\n")  # names no mode: keeps it
    assert c.read_artifact(w.admin, pid, "src/run.sh").artifact.mode is FileMode.EXECUTABLE
    art = c.edit_artifact(w.human, pid, "src/run.sh", w.put(b"x\n"), 3, FileMode.REGULAR)
    assert art.mode is FileMode.REGULAR
    assert c.read_artifact(w.admin, pid, "src/run.sh", 2).artifact.mode is FileMode.EXECUTABLE


def test_a_candidate_without_modes_makes_its_paths_regular(w: World) -> None:
    """What the verifier saw is what becomes authoritative: the candidate said regular."""
    c, pid = w.coord, w.project_id
    c.edit_artifact(w.human, pid, "src/run.sh", w.put(b"#!/bin/sh\n"), 0, FileMode.EXECUTABLE)
    task = w.new_task()
    attempt = c.claim(w.agent, task.id)
    cand = w.candidate(attempt, {"src/run.sh": b"#!/bin/sh\nexit 1\n"})
    assert dict(cand.modes) == {}
    w.complete(task, attempt, cand, [w.receipt(cand).id])
    assert c.read_artifact(w.admin, pid, "src/run.sh").artifact.mode is FileMode.REGULAR


def test_a_mode_change_alone_is_a_change_and_a_receipt_does_not_cross_modes(w: World) -> None:
    c, pid = w.coord, w.project_id
    data = b"#!/bin/sh\necho same bytes\n"
    c.edit_artifact(w.human, pid, "src/run.sh", w.put(data), 0, FileMode.REGULAR)
    task = w.new_task()
    attempt = c.claim(w.agent, task.id)
    regular = w.candidate(attempt, {"src/run.sh": data})
    executable = w.candidate(attempt, {"src/run.sh": data}, modes={"src/run.sh": FileMode.EXECUTABLE})
    assert regular.files == executable.files and regular.digest != executable.digest
    assert regular.dependency_digest == executable.dependency_digest
    # a receipt for the 644 bytes, cited for the 755 candidate: not bound (its digest differs)
    with pytest.raises(CompletionRejected) as refused:
        w.complete(task, attempt, executable, [w.receipt(regular).id])
    assert refused.value.failed[0] == "evidence_not_bound"
    assert c.read_artifact(w.admin, pid, "src/run.sh").artifact.mode is FileMode.REGULAR
    w.complete(task, attempt, executable, [w.receipt(executable).id])
    art = c.read_artifact(w.admin, pid, "src/run.sh").artifact
    assert (art.mode, art.revision) == (FileMode.EXECUTABLE, 2)


def test_modes_are_normalized_and_checked(w: World) -> None:
    c = w.coord
    task = w.new_task()
    attempt = c.claim(w.agent, task.id)
    explicit = w.candidate(attempt, {"src/a.txt": b"a\n"}, modes={"src/a.txt": FileMode.REGULAR})
    implicit = w.candidate(attempt, {"src/a.txt": b"a\n"})
    assert explicit.digest == implicit.digest and dict(explicit.modes) == {}
    spelled = w.candidate(attempt, {"src/b.sh": b"b\n"}, modes={"src/./b.sh": FileMode.EXECUTABLE})
    assert dict(spelled.modes) == {"src/b.sh": FileMode.EXECUTABLE}
    with pytest.raises(InvalidRequest, match="does not write"):
        w.candidate(attempt, {"src/a.txt": b"a\n"}, modes={"src/other": FileMode.EXECUTABLE})
    with pytest.raises(InvalidRequest, match="does not write"):
        w.candidate(attempt, {"src/input.txt": None}, modes={"src/input.txt": FileMode.EXECUTABLE})
    with pytest.raises(InvalidRequest, match="unknown mode"):
        w.candidate(attempt, {"src/a.txt": b"a\n"}, modes={"src/a.txt": "symlink"})  # type: ignore[dict-item]


def test_a_tombstone_is_regular_and_so_is_a_path_that_comes_back(w: World) -> None:
    c, pid = w.coord, w.project_id
    c.edit_artifact(w.human, pid, "src/run.sh", w.put(b"#!/bin/sh\n"), 0, FileMode.EXECUTABLE)
    task = w.new_task()
    attempt = c.claim(w.agent, task.id)
    cand = w.candidate(attempt, {"src/run.sh": None})
    w.complete(task, attempt, cand, [w.receipt(cand).id])
    assert c.read_artifact(w.admin, pid, "src/run.sh").artifact.mode is FileMode.REGULAR
    w.edit("src/run.sh", b"back\n")
    assert c.read_artifact(w.admin, pid, "src/run.sh").artifact.mode is FileMode.REGULAR
    history = w.coord.store.read(lambda tx: tx.content.history(pid, "src/run.sh"))
    assert [h["mode"] for h in history] == [FileMode.EXECUTABLE, FileMode.REGULAR, FileMode.REGULAR]
