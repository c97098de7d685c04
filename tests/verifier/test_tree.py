"""Materializing a candidate tree: exact bytes, checked digests, no path games."""

from __future__ import annotations

from pathlib import Path

import pytest

from studiolo.core.canonical import digest_bytes
from studiolo.service.verification import CandidateTree, TreeEntry
from studiolo.verifier.tree import (
    IntegrityError,
    TreeConflict,
    TreeTooLarge,
    materialize,
    remove_tree,
    tree_digest,
)

BLOBS = {digest_bytes(b): b for b in (b"one\n", b"two\n", b"three\n")}
ONE, TWO, THREE = (digest_bytes(b) for b in (b"one\n", b"two\n", b"three\n"))


def _spec(*entries: tuple[str, str]) -> CandidateTree:
    rows = tuple(TreeEntry(path=p, digest=d, revision=None, source="candidate") for p, d in entries)
    return CandidateTree(
        candidate_id="cnd_test00",
        candidate_digest="sha256:" + "0" * 64,
        dependency_digest="sha256:" + "1" * 64,
        entries=rows,
        unreproducible=(),
        withheld=(),
    )


def test_entries_are_written_exactly(tmp_path: Path) -> None:
    materialize(_spec(("a.txt", ONE), ("src/pkg/b.txt", TWO)), BLOBS.__getitem__, tmp_path)
    assert (tmp_path / "a.txt").read_bytes() == b"one\n"
    assert (tmp_path / "src" / "pkg" / "b.txt").read_bytes() == b"two\n"


def test_bytes_that_do_not_match_their_digest_are_refused(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="does not match"):
        materialize(_spec(("a.txt", ONE)), lambda _d: b"evil\n", tmp_path)


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd", "a/./b.txt", "a//b.txt", "a\\b.txt"])
def test_paths_must_be_in_normal_form(tmp_path: Path, path: str) -> None:
    with pytest.raises(IntegrityError):
        materialize(_spec((path, ONE)), BLOBS.__getitem__, tmp_path / "tree")
    assert not (tmp_path / "escape.txt").exists()


def test_a_path_that_is_a_file_and_a_directory_conflicts(tmp_path: Path) -> None:
    with pytest.raises(TreeConflict):
        materialize(_spec(("src", ONE), ("src/a.txt", TWO)), BLOBS.__getitem__, tmp_path)


def test_the_digest_sees_every_kind_of_change(tmp_path: Path) -> None:
    materialize(_spec(("a.txt", ONE), ("d/b.txt", TWO)), BLOBS.__getitem__, tmp_path)
    seen = {tree_digest(tmp_path)}
    changes = [
        lambda: (tmp_path / "a.txt").write_bytes(b"ONE\n"),
        lambda: (tmp_path / "a.txt").chmod(0o755),  # the same bytes, now executable
        lambda: (tmp_path / "d" / "new").mkdir(),
        lambda: (tmp_path / "link").symlink_to("a.txt"),
        lambda: (tmp_path / "d" / "b.txt").unlink(),
    ]
    for change in changes:
        change()
        digest = tree_digest(tmp_path)
        assert digest not in seen
        seen.add(digest)


def test_the_digest_is_stable(tmp_path: Path) -> None:
    for sub in ("x", "y"):
        materialize(_spec(("b.txt", TWO), ("a.txt", ONE)), BLOBS.__getitem__, tmp_path / sub)
    assert tree_digest(tmp_path / "x") == tree_digest(tmp_path / "y")


def test_remove_tree_handles_read_only_directories(tmp_path: Path) -> None:
    root = tmp_path / "t"
    materialize(_spec(("d/e/f.txt", THREE)), BLOBS.__getitem__, root.parent / "t")
    for p in (root / "d" / "e", root / "d", root):
        p.chmod(0o500)
    remove_tree(root)
    assert not root.exists()


def test_a_blob_under_many_paths_is_written_once(tmp_path: Path) -> None:
    big = b"x" * 100_000
    blobs = {digest_bytes(big): big}
    spec = _spec(*((f"d{i}/copy.bin", digest_bytes(big)) for i in range(50)))
    materialize(spec, blobs.__getitem__, tmp_path)
    copies = list(tmp_path.glob("d*/copy.bin"))
    assert len(copies) == 50 and all(c.read_bytes() == big for c in copies)
    assert len({c.stat().st_ino for c in copies}) == 1  # one inode: 100 kB on disk, not 5 MB


def test_a_tree_over_the_cap_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    big = b"y" * 100_000
    fetched: list[str] = []

    def fetch(digest: str) -> bytes:
        fetched.append(digest)
        return big

    spec = _spec(*((f"copy{i}.bin", digest_bytes(big)) for i in range(100)))
    with pytest.raises(TreeTooLarge, match="more than 1000000 bytes"):
        materialize(spec, fetch, tmp_path, max_bytes=1_000_000)
    assert list(tmp_path.iterdir()) == [] and fetched == [digest_bytes(big)]
