"""An artifact revision's mode: set by a direct edit, kept by a completion and by an edit
that names none (on both back-ends)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo.core.model import FileMode
from tests.world import FakeClock, World, build_world


@pytest.fixture
def w(tmp_path: Path, store_url: str) -> Iterator[World]:
    """A world on each back-end, its store closed after the test."""
    world = build_world(tmp_path, FakeClock(), store_url)
    yield world
    world.coord.store.dispose()


def test_a_mode_is_set_by_an_edit_and_kept_by_a_completion(w: World) -> None:
    c, pid = w.coord, w.project_id
    assert c.read_artifact(w.admin, pid, "src/input.txt").artifact.mode is FileMode.REGULAR
    run = w.put(b"#!/bin/sh\necho hi\n")
    art = c.edit_artifact(w.human, pid, "src/run.sh", run, 0, FileMode.EXECUTABLE)
    assert art.mode is FileMode.EXECUTABLE
    task = w.new_task()
    attempt = c.claim(w.agent, task.id)
    cand = w.candidate(attempt, {"src/run.sh": b"#!/bin/sh\necho bye\n", "src/new.txt": b"new\n"})
    w.complete(task, attempt, cand, [w.receipt(cand).id])
    arts = {a.path: a for a in c.list_artifacts(w.admin, pid)}
    assert arts["src/run.sh"].mode is FileMode.EXECUTABLE
    assert arts["src/run.sh"].revision == 2
    assert arts["src/new.txt"].mode is FileMode.REGULAR
    history = w.coord.store.read(lambda tx: tx.content.history(pid, "src/run.sh"))
    assert [h["mode"] for h in history] == [FileMode.EXECUTABLE, FileMode.EXECUTABLE]
    w.edit("src/run.sh", b"plain\n")  # names no mode: keeps it
    assert c.read_artifact(w.admin, pid, "src/run.sh").artifact.mode is FileMode.EXECUTABLE
    art = c.edit_artifact(w.human, pid, "src/run.sh", w.put(b"x\n"), 3, FileMode.REGULAR)
    assert art.mode is FileMode.REGULAR
    assert c.read_artifact(w.admin, pid, "src/run.sh", 2).artifact.mode is FileMode.EXECUTABLE


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
