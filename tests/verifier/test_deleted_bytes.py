"""Re-verification once a candidate's bytes were deleted: the queue no longer offers it, its
tree answers `bytes_deleted`, and a runner that had it queued passes over it for good with
the reason (never an error retried on every poll)."""

from __future__ import annotations

import pytest

from studiolo._exceptions import BytesDeleted
from tests.verifier.conftest import MakeRunner
from tests.world import World


def test_deleted_bytes_cannot_be_verified_again(world: World, make_runner: MakeRunner) -> None:
    c = world.coord
    attempt = c.claim(world.agent, world.new_task().id)
    cand = world.candidate(attempt, {"src/answer.txt": b"PASSWORD=1\n"})
    runner = make_runner()
    [item] = runner.port.work(10)
    digest = cand.files["src/answer.txt"]
    assert digest is not None
    c.delete_bytes(world.admin, world.project_id, digest, "a leaked password")

    assert c.verification_queue(world.verifier, world.project_id) == []
    with pytest.raises(BytesDeleted, match="a leaked password"):
        c.candidate_tree(world.verifier, cand.id)
    report = runner.verify(item)
    assert report.status == "skipped" and "re-verification impossible: " in report.summary
    assert "a leaked password" in report.summary
