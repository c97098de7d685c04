"""A pass's objects made in memory and written as one pack (studiolo/git/objects.py) have
the ids libgit2 gives the same content, and git's own fsck takes the packs, merged or not."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from studiolo.core.model import FileMode
from studiolo.git import objects
from studiolo.git.repository import Change, GitRepo

_NAMES = st.sampled_from(["a", "b", "a.txt", "a-b", "a0", "z", "é"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=3).map("/".join)
_EDIT = st.tuples(_PATHS, st.one_of(st.none(), st.binary(max_size=40)), st.sampled_from([None, *FileMode]))
_STEPS = st.lists(st.lists(_EDIT, min_size=1, max_size=4), min_size=1, max_size=6)


def _replay(
    repo: GitRepo, steps: list[list[tuple[str, bytes | None, FileMode | None]]], batched: bool
) -> list[str]:
    """Commits of `steps` (a step's conflicting paths skipped alike on both sides); their ids."""
    ids, tip = [], None
    for i, step in enumerate(steps):
        with repo.batch() if batched else contextlib.nullcontext():
            changes = {p: None if d is None else Change(repo.blob(d), m) for p, d, m in step}
            try:
                tree = repo.apply(repo.tree_of(tip), changes)
            except Exception as exc:  # a path both a file and a directory: refused alike
                ids.append(type(exc).__name__)
                continue
            tip = repo.commit(
                tree, tip, ("Ada", "ada@studiolo.invalid"), 1_700_000_000 + i, f"step {i}\n\nX: {i}\n"
            )
        ids.append(str(tip))
    return ids


@settings(max_examples=40, deadline=None)
@given(steps=_STEPS)
def test_a_batch_makes_the_ids_libgit2_makes(
    steps: list[list[tuple[str, bytes | None, FileMode | None]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plain = _replay(GitRepo(Path(tmp) / "plain.git"), steps, batched=False)
        batched = _replay(GitRepo(Path(tmp) / "batched.git"), steps, batched=True)
        assert batched == plain


def test_packs_pass_gits_fsck_and_merge_geometrically(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "p.git")
    tip = None
    for i in range(objects._MAX_PACKS * 2):
        with repo.batch():
            tree = repo.apply(
                repo.tree_of(tip), {f"d{i % 3}/f{i}.txt": Change(repo.blob(b"%d\n" % i), FileMode.EXECUTABLE)}
            )
            tip = repo.commit(tree, tip, ("Ada", "ada@studiolo.invalid"), 1_700_000_000 + i, f"c {i}\n")
        packs = list((tmp_path / "p.git" / "objects" / "pack").glob("pack-*.pack"))
        assert len(packs) <= objects._MAX_PACKS
    assert tip is not None
    repo.repo.references.create("refs/heads/main", tip)
    fsck = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling"], cwd=tmp_path / "p.git", capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stderr
    files = repo.files(tip)
    assert len(files) == objects._MAX_PACKS * 2
    assert files["d0/f0.txt"] == (b"0\n", FileMode.EXECUTABLE)
    assert not list((tmp_path / "p.git" / "objects").glob("[0-9a-f][0-9a-f]"))  # nothing loose
