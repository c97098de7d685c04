"""The completion's content statements on both back-ends: `ContentRepo.publish` moves
pointers, history and collection counters exactly as `write_artifact` does path by path, and
`declared_revisions` reads what `revisions` and `collection_revisions` read."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from studiolo.core.model import Project
from studiolo.store import Store, Tx
from studiolo.store import schema as s

_segment = st.sampled_from(["a", "b", "src", "docs", "x.txt", "y.md"])
_path = st.lists(_segment, min_size=1, max_size=4).map("/".join)
_digest = st.sampled_from([None, "sha256:" + "1" * 64, "sha256:" + "2" * 64])
_files = st.dictionaries(_path, _digest, min_size=1, max_size=8)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    ledger = Store(store_url)
    ledger.upgrade()
    yield ledger
    ledger.dispose()


_ids = itertools.count()


def _state(tx: Tx, project_id: str) -> dict[str, Any]:
    def rows(table: Any, *order: Any) -> list[tuple[Any, ...]]:
        q = select(*(c for c in table.c if c.name != "project_id")).where(table.c.project_id == project_id)
        return [tuple(r) for r in tx.conn.execute(q.order_by(*order))]

    return {
        "artifacts": rows(s.artifacts, s.artifacts.c.path),
        "history": rows(s.artifact_revisions, s.artifact_revisions.c.path, s.artifact_revisions.c.revision),
        "collections": rows(s.collections, s.collections.c.prefix),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_files, files=_files)
def test_publish_is_write_artifact_for_every_path(
    store: Store, before: dict[str, str | None], files: dict[str, str | None]
) -> None:
    """Also with the revisions read beforehand (`current`, as a completion does)."""
    n = next(_ids)
    one, other, known = (f"prj_publish{n:06d}{x}" for x in "abc")

    def run(tx: Tx) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        for pid in (one, other, known):
            tx.access.add_project(Project(pid, pid, 0.0))
            for path, digest in sorted(before.items()):
                tx.content.write_artifact(pid, path, digest, 1.0, "prn_someone", "edit")
        published = tx.content.publish(one, files, 2.0, "prn_agent", "cmp_x")
        one_by_one = {
            path: tx.content.write_artifact(other, path, digest, 2.0, "prn_agent", "cmp_x")
            for path, digest in sorted(files.items())
        }
        current = tx.content.declared_revisions(known, files, ())[0]
        return published, one_by_one, tx.content.publish(known, files, 2.0, "prn_agent", "cmp_x", current)

    published, one_by_one, with_known = store.write(run)
    assert published == one_by_one == with_known and list(published) == sorted(files)
    state = store.read(lambda tx: _state(tx, one))
    assert state == store.read(lambda tx: _state(tx, other)) == store.read(lambda tx: _state(tx, known))


@pytest.mark.parametrize("stale", [-1, 1], ids=["behind", "ahead"])
def test_publishing_from_revisions_that_are_not_current_fails_and_moves_nothing(
    store: Store, stale: int
) -> None:
    """`current` is read under the project's gate, so it cannot be stale; if it were, the
    write fails rather than record a history that skips or repeats a revision."""
    pid = f"prj_stale{next(_ids):06d}"
    files = {"src/a.txt": "sha256:" + "1" * 64, "src/new.txt": "sha256:" + "2" * 64}

    def setup(tx: Tx) -> None:
        tx.access.add_project(Project(pid, pid, 0.0))
        for _ in range(3):
            tx.content.write_artifact(pid, "src/a.txt", None, 1.0, "prn_someone", "edit")

    store.write(setup)
    before = store.read(lambda tx: _state(tx, pid))

    def publish(tx: Tx) -> None:
        current = tx.content.declared_revisions(pid, files, ())[0]
        tx.content.publish(pid, files, 2.0, "prn_agent", "cmp_x", {**current, "src/a.txt": 3 + stale})

    with pytest.raises(Exception, match=r"(?i)\bnull\b"):
        store.write(publish)
    assert store.read(lambda tx: _state(tx, pid)) == before


@pytest.mark.parametrize("n", [3, 2_500])
def test_declared_revisions_are_the_two_reads_in_one(store: Store, n: int) -> None:
    """Also past one statement's parameters: a candidate may declare thousands of paths."""
    pid = f"prj_declared{n:06d}"
    paths = [f"src/f{i:05d}.txt" for i in range(n)]
    prefixes = ["", "src/", "docs/", *(f"d{i}/" for i in range(n))]

    def run(tx: Tx) -> None:
        tx.access.add_project(Project(pid, pid, 0.0))
        tx.content.publish(pid, {p: None for p in paths[::2]}, 1.0, "prn_someone", "edit")

    store.write(run)
    both = store.read(lambda tx: tx.content.declared_revisions(pid, paths, prefixes))
    apart = store.read(
        lambda tx: (tx.content.revisions(pid, paths), tx.content.collection_revisions(pid, prefixes))
    )
    assert both == apart
    assert both[0][paths[0]] == 1 and both[0][paths[1]] == 0 and both[1]["src/"] == (n + 1) // 2


def test_blobs_reads_many_digests_at_once_and_leaves_out_the_missing(store: Store) -> None:
    """The projector's batch read (`ContentRepo.blobs`): across a chunk boundary, the bytes of
    each stored digest exactly as `blob` gives them, and no entry for a digest not stored."""
    from studiolo.core.canonical import digest_bytes

    datas = [f"file {i}\n".encode() * (i % 7 + 1) for i in range(450)] + [b"", b"\x00\xff"]
    digests = [digest_bytes(d) for d in datas]

    def put(tx: Tx) -> None:
        for digest, data in zip(digests, datas, strict=True):
            tx.content.put_blob(digest, data, 1.0)

    store.write(put)
    missing = ["sha256:" + "9" * 64, "sha256:" + "8" * 64]
    got = store.read(lambda tx: tx.content.blobs([*digests, *missing, digests[0]]))
    assert got == dict(zip(digests, datas, strict=True))
    assert got == {d: store.read(lambda tx, d=d: tx.content.blob(d)) for d in digests}
    assert store.read(lambda tx: tx.content.blobs([])) == {}
