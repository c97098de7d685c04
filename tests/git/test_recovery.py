"""The recoverable publication protocol: the ledger commits first, the refs move after by
compare-and-swap. A projector killed with SIGKILL anywhere (here: right before a ref moves,
and at random moments) leaves refs that the next pass completes, with every commit id the
one a crash-free run gives."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from studiolo.git.repository import BRANCH, NOTES, GitRepo, RefMoved
from tests.git.helpers import projector_for
from tests.world import World, build_world

_CHILD = """
import os, signal, sys
from pathlib import Path
from studiolo.git.projector import Projector
from studiolo.git.repository import GitRepo
from studiolo.store import Store

db, root, kill_at = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
calls = 0
advance = GitRepo.advance

def dying(self, ref, old, new):
    global calls
    calls += 1
    if calls == kill_at:  # the objects are written; the ref has not moved
        os.kill(os.getpid(), signal.SIGKILL)
    advance(self, ref, old, new)

GitRepo.advance = dying
store = Store(db)
Projector(store, root, batch=int(sys.argv[4])).run_once()
"""


def _ledger(tmp_path: Path, changes: int = 24) -> World:
    w = build_world(tmp_path)
    rng = random.Random(7)
    for i in range(changes):
        if i % 3 == 0:
            task = w.new_task(f"task {i}")
            attempt = w.coord.claim(w.agent, task.id)
            cand = w.candidate(attempt, {f"src/f{rng.randrange(5)}.txt": f"{i}\n".encode()})
            w.complete(task, attempt, cand, [w.receipt(cand).id])
        else:
            w.edit(f"docs/d{rng.randrange(4)}.md", None if i % 7 == 0 else f"doc {i}\n".encode())
    return w


def _history(root: Path, project_id: str) -> tuple[list[str], pygit2.Oid | None]:
    repo = GitRepo(root / f"{project_id}.git")
    tip = repo.tip(BRANCH)[0]
    walk = [str(c.id) for c in repo.repo.walk(tip)] if tip is not None else []
    return walk, repo.tip(NOTES)[0]


def expected_version(w: World) -> int:
    return w.coord.store.read(lambda tx: tx.publications.head(w.project_id))


def _child(db: str, root: Path, kill_at: int, batch: int) -> int:
    args = [sys.executable, "-c", _CHILD, db, str(root), str(kill_at), str(batch)]
    return subprocess.run(args, check=False, timeout=120).returncode


@pytest.mark.slow
def test_killed_before_each_ref_move_the_replay_gives_the_same_ids(tmp_path: Path) -> None:
    w = _ledger(tmp_path)
    reference = projector_for(w, tmp_path / "reference")
    reference.run_once()
    expected = _history(tmp_path / "reference", w.project_id)
    assert len(expected[0]) == 2 + 24
    db, root = w.coord.store.url, tmp_path / "crashed"
    kills, versions = 0, [0]
    for kill_at in (1, 2, 1, 3, 2, 1, 4, 2):  # the ref moves of one pass: notes, then branch
        if _child(db, root, kill_at, batch=3) == -signal.SIGKILL:
            kills += 1
        versions.append(GitRepo(root / f"{w.project_id}.git").tip(BRANCH)[1])
    assert kills == 8
    assert versions == sorted(versions) and versions[-1] < expected_version(w)  # never backwards
    projector_for(w, root).run_once()  # the start of the next process: the replay
    assert _history(root, w.project_id) == expected


@pytest.mark.slow
def test_killed_at_random_moments_the_replay_gives_the_same_ids(tmp_path: Path) -> None:
    w = _ledger(tmp_path)
    reference = projector_for(w, tmp_path / "reference")
    reference.run_once()
    expected = _history(tmp_path / "reference", w.project_id)
    db, root = w.coord.store.url, tmp_path / "crashed"
    rng = random.Random(11)
    for _ in range(6):
        args = [sys.executable, "-c", _CHILD, db, str(root), "0", "1"]
        child = subprocess.Popen(args)
        time.sleep(rng.uniform(0.3, 1.5))  # an interpreter's start, then some commits
        child.send_signal(signal.SIGKILL)
        child.wait()
    projector_for(w, root).run_once()
    assert _history(root, w.project_id) == expected


def test_a_ref_never_moves_backwards_or_sideways(world: World, tmp_path: Path) -> None:
    w = world
    projector = projector_for(w, tmp_path / "git")
    projector.run_once()
    repo = projector.repo(w.project_id)
    tip, _ = repo.tip(BRANCH)
    assert tip is not None
    parent = repo.repo[tip].parents[0].id
    with pytest.raises(RefMoved):
        repo.advance(BRANCH, tip, parent)  # backwards
    other = repo.commit(repo.tree_of(tip), parent, ("x", "x@y"), 0.0, "sideways\n")  # type: ignore[arg-type]
    with pytest.raises(RefMoved):
        repo.advance(BRANCH, tip, other)
    with pytest.raises(RefMoved):
        repo.advance(BRANCH, parent, tip)  # stale old value: compare-and-swap fails
    assert repo.tip(BRANCH)[0] == tip


def test_lock_files_a_killed_publisher_left_do_not_stop_the_next(world: World, tmp_path: Path) -> None:
    """kill -9 while libgit2 holds a ref's lock leaves `<ref>.lock` behind (seen in CI: the
    notes ref); the next publisher, holding the publisher lock, removes them and publishes."""
    w = world
    projector = projector_for(w, tmp_path / "git")
    projector.run_once()
    repo = projector.repo(w.project_id)
    before, _ = repo.tip(BRANCH)
    stale = [repo.path / "refs" / "heads" / "main.lock", repo.path / "refs" / "notes" / "studiolo.lock"]
    for lock in stale:
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_text("0" * 40 + "\n")
    w.edit("docs/after-the-crash.md", b"still published\n")
    assert projector.run_once() == 1
    after, _ = projector.repo(w.project_id).tip(BRANCH)
    assert after != before and not any(lock.exists() for lock in stale)
