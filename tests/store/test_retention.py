"""The retention repository's reads and writes on both back-ends: what a sweep finds (in
order, in batches, skipping held tasks and what a sweep took), which digests something else
still names, holds and tombstones round-trip."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo._exceptions import BytesDeleted
from studiolo.core.retention import Hold, RetainedKind, RetentionPolicy, Tombstone
from studiolo.store import Store, Tx
from studiolo.store.backup import backup, restore
from tests.store.test_backup import target_url  # noqa: F401 - a second, empty database
from tests.world import World, build_world


@pytest.fixture
def world(store_url: str, tmp_path: Path) -> Iterator[World]:
    w = build_world(tmp_path, url=store_url)
    yield w
    w.coord.store.dispose()


def _released(w: World, data: bytes) -> tuple[str, str, str]:
    attempt = w.coord.claim(w.agent, w.new_task().id)
    cand = w.candidate(attempt, {"src/answer.txt": data})
    w.coord.release(w.agent, attempt.id)
    digest = cand.files["src/answer.txt"]
    assert digest is not None
    return cand.id, cand.task_id, digest


def test_expired_candidates_in_order_in_batches_skipping_held_and_swept(world: World) -> None:
    w = world
    made = []
    for i in range(4):
        made.append(_released(w, f"try {i}\n".encode()))
        w.clock.advance(1.0)  # made in this order
    pid = w.project_id

    def find(tx: Tx, held: list[str]) -> list[str]:
        return [x[0] for x in tx.retention.expired_candidates(pid, tx.now, 3, held)]

    def run(tx: Tx) -> tuple[list[str], list[str], list[str]]:
        first = find(tx, [])
        skipping = find(tx, [made[0][1]])
        tx.retention.mark_swept(RetainedKind.CANDIDATES, pid, [made[1][0]], tx.now)
        return first, skipping, find(tx, [])

    first, skipping, after = w.coord.store.write(run)
    ids = [m[0] for m in made]
    assert first == ids[:3]
    assert skipping == ids[1:4]
    assert after == [ids[0], ids[2], ids[3]]
    assert w.coord.store.read(lambda tx: tx.retention.expired_candidates(pid, 0.0, 10)) == []


def test_still_named_sees_every_kind_of_reference_but_swept_ones(world: World) -> None:
    w = world
    cand_id, _task, digest = _released(w, b"kept by a candidate\n")
    w.edit("docs/a.md", b"kept by an artifact\n")
    published = w.coord.read_artifact(w.admin, w.project_id, "docs/a.md").artifact.digest
    loose = w.put(b"named by nothing\n")
    pid = w.project_id

    def run(tx: Tx) -> tuple[set[str], set[str]]:
        before = tx.retention.still_named([digest, published or "", loose])
        tx.retention.mark_swept(RetainedKind.CANDIDATES, pid, [cand_id], tx.now)
        return before, tx.retention.still_named([digest, published or "", loose])

    before, after = w.coord.store.write(run)
    assert before == {digest, published}
    assert after == {published}


def test_policies_holds_and_tombstones_round_trip(world: World) -> None:
    w = world
    pid = w.project_id
    hold = Hold("hld_roundtrip1", pid, None, "why ✓", w.admin.id, 12.5)
    stone = Tombstone(
        pid, "sha256:" + "a" * 64, 2**40, ("a/b.txt", "c ✓.md"), "a/b.txt", "leak", w.admin.id, 13.25
    )
    policy = RetentionPolicy(candidates=86400.0, verifier_logs=None, delegations=0.5)

    def run(tx: Tx) -> None:
        tx.retention.set_policy(pid, policy, 1.0, w.admin.id)
        tx.retention.add_hold(hold)
        tx.retention.add_tombstone(stone)
        tx.retention.add_tombstone(
            Tombstone(pid, stone.digest, 1, (), "x", "second", "y", 99.0)
        )  # kept first

    w.coord.store.write(run)

    def read(tx: Tx) -> tuple[object, ...]:
        r = tx.retention
        return (
            r.policy(pid),
            r.holds(pid),
            r.tombstones(pid, [stone.digest]),
            r.deleted_digests(),
            r.projects_with_policy(),
        )

    assert w.coord.store.read(read) == (policy, [hold], {stone.digest: stone}, {stone.digest}, [pid])
    w.coord.store.write(lambda tx: tx.retention.release_hold(hold.id, 20.0, w.admin.id, "done"))
    assert w.coord.store.read(lambda tx: (tx.retention.holds(pid), tx.retention.hold(hold.id))) == (
        [],
        Hold(hold.id, pid, None, "why ✓", w.admin.id, 12.5, 20.0, w.admin.id, "done"),
    )


def test_a_sweep_and_a_deletion_on_either_back_end(world: World) -> None:
    w, c = world, world.coord
    c.set_retention(w.admin, w.project_id, {"candidates": 5.0})
    _cid, _task, gone = _released(w, b"old\n")
    w.clock.advance(10.0)
    (report,) = c.sweep_retention(w.admin)
    assert report.swept == {"candidates": 1} and report.blobs == 1
    w.edit("src/secret.txt", b"TOKEN=1\n")
    secret = c.read_artifact(w.admin, w.project_id, "src/secret.txt").artifact.digest
    assert secret is not None
    c.delete_bytes(w.admin, w.project_id, secret, "a leaked token")
    assert c.store.read(lambda tx: tx.retention.deleted_digests()) == {gone, secret}
    assert c.verify_audit().ok


def test_a_restore_never_brings_deleted_bytes_back(
    world: World,
    tmp_path: Path,
    target_url: str,  # noqa: F811 - the fixture imported above
) -> None:
    """Backed up before the deletion: restored in place, or moved with the ledger that deleted
    them as the replaced one, the bytes stay deleted and their tombstone comes along."""
    w, c = world, world.coord
    w.edit("src/secret.txt", b"TOKEN=2\n")
    secret = c.read_artifact(w.admin, w.project_id, "src/secret.txt").artifact.digest
    assert secret is not None
    file = tmp_path / "before-the-deletion.jsonl"
    backup(c.store, file)
    c.delete_bytes(w.admin, w.project_id, secret, "a leaked token")

    restore(c.store, file)  # in place: the replaced ledger knew of the deletion
    with pytest.raises(BytesDeleted, match="a leaked token"):
        c.get_blob(w.admin, secret)
    assert c.store.read(lambda tx: tx.content.blob(secret)) is None
    assert c.verify_audit().ok

    moved = Store(target_url)
    restore(moved, file, previous=c.store)  # a move: the previous ledger's deletions win too
    assert moved.read(lambda tx: (tx.content.blob(secret), sorted(tx.retention.deleted_digests()))) == (
        None,
        [secret],
    )
    moved.dispose()
