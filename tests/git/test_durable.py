"""The order a power cut needs: a pass's pack, its index and their directory are fsynced
before a ref is renamed into place; the projector writes no loose object; a ref whose lock
file git (or another writer) holds does not move."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from studiolo.git.repository import BRANCH, RefMoved
from tests.git.helpers import branch_files, ledger_files, projector_for
from tests.world import World


def test_the_pack_and_its_directory_are_on_disk_before_a_ref_moves(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = world
    projector = projector_for(w, tmp_path / "git")
    projector.publish(w.project_id)
    w.edit("src/input.txt", b"22\n")
    calls: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    assert projector.publish(w.project_id) == 1
    monkeypatch.undo()
    ref_moves = [i for i, (kind, path) in enumerate(calls) if kind == "replace" and "/refs/" in path]
    assert ref_moves, calls
    before = calls[: ref_moves[0]]
    pack_dir = next(path for kind, path in calls if kind == "replace" and path.endswith(".idx"))
    pack_dir = str(Path(pack_dir).parent)
    synced = [path for kind, path in before if kind == "fsync"]
    assert any(p.endswith(".idx") for p in synced) and pack_dir in synced
    assert any(p.startswith(pack_dir) and "tmp_pack" in p for p in synced)  # the pack itself
    objects = Path(pack_dir).parent
    loose = [p for p in objects.iterdir() if len(p.name) == 2 and any(p.iterdir())]
    assert loose == []  # every object the projector wrote is in a pack
    assert branch_files(projector, w.project_id) == ledger_files(w)


def test_a_ref_locked_by_another_writer_does_not_move(world: World, tmp_path: Path) -> None:
    w = world
    projector = projector_for(w, tmp_path / "git")
    projector.publish(w.project_id)
    repo = projector.repo(w.project_id)
    tip, _ = repo.tip(BRANCH)
    assert tip is not None
    sig = pygit2.Signature("t", "t@example.com", 0, 0)
    child = repo.repo.create_commit(None, sig, sig, "child\n", repo.tree_of(tip), [tip])
    lock = repo.path / "refs" / "heads" / "main.lock"
    lock.write_text("held by git\n")
    with pytest.raises(RefMoved, match="locked"):
        repo.advance(BRANCH, tip, child)
    assert repo.tip(BRANCH)[0] == tip and lock.read_text() == "held by git\n"
    lock.unlink()
    repo.advance(BRANCH, tip, child)
    assert repo.tip(BRANCH)[0] == child
    with pytest.raises(RefMoved):
        repo.advance(BRANCH, tip, child)  # the compare-and-swap: it is no longer at `tip`
