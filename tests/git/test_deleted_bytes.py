"""Bytes deleted on request in the git projection (docs/git.md, "Deleted bytes"): the
projector publishes a commit that removes the file going forward, never crashes on a blob
the ledger no longer has, and a repository rebuilt after the deletion holds a placeholder
where the bytes were (old commits already pushed elsewhere are history)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2

from studiolo.git.projector import deleted_placeholder
from studiolo.git.repository import BRANCH
from tests.git.helpers import branch_files, ledger_files, projector_for
from tests.world import World


def _history(repo: pygit2.Repository) -> list[pygit2.Commit]:
    head = repo.references.get(BRANCH)
    return list(repo.walk(head.target, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE))


def _blob_at(repo: pygit2.Repository, commit: pygit2.Commit, path: str) -> bytes | None:
    try:
        entry = commit.tree[path]
    except KeyError:
        return None
    obj = repo[entry.id]
    assert isinstance(obj, pygit2.Blob)
    return obj.data


def test_a_deletion_is_a_commit_removing_the_file_and_a_rebuild_does_not_crash(
    world: World, tmp_path: Path
) -> None:
    w = world
    w.edit("src/key.pem", b"-----BEGIN PRIVATE KEY-----\n")
    secret = w.coord.read_artifact(w.admin, w.project_id, "src/key.pem").artifact.digest
    assert secret is not None
    projector = projector_for(w, tmp_path / "published")
    projector.run_once()  # published before the deletion
    w.coord.delete_bytes(w.admin, w.project_id, secret, "a private key committed by mistake")
    assert projector.run_once() == 1
    assert "src/key.pem" not in branch_files(projector, w.project_id)
    assert branch_files(projector, w.project_id) == ledger_files(w)
    last = _history(projector.repo(w.project_id).repo)[-1]
    assert last.message.startswith("Remove deleted bytes: a private key committed by mistake\n")

    unpublished = projector_for(w, tmp_path / "late")  # never saw the bytes: a rebuild
    unpublished.run_once()
    repo = unpublished.repo(w.project_id).repo
    held = [_blob_at(repo, c, "src/key.pem") for c in _history(repo)]
    assert b"-----BEGIN PRIVATE KEY-----\n" not in held
    assert deleted_placeholder(secret) in held
    assert branch_files(unpublished, w.project_id) == ledger_files(w)
    tip = unpublished.repo(w.project_id).tip(BRANCH)[0]
    shutil.rmtree(tmp_path / "late")
    again = projector_for(w, tmp_path / "late")
    again.run_once()
    assert again.repo(w.project_id).tip(BRANCH)[0] == tip  # the placeholder is a pure function
