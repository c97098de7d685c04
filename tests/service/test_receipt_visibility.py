"""Who may read an old receipt: whoever holds the read grant *when reading*, not whoever
held it when the receipt was issued (docs/operations.md, "Evidence: retention, deletion,
visibility"). A revoked reader sees neither the receipt nor the completion receipt."""

from __future__ import annotations

import pytest

from studiolo._exceptions import NotFound
from tests.world import World


def test_a_receipt_is_read_with_the_grant_held_at_read_time(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/a.txt": b"done"})
    receipt = world.receipt(cand)
    reader = world.agent2  # read-only on this task: never its worker, never its verifier
    assert world.coord.receipt(reader, receipt.id).id == receipt.id
    world.coord.revoke_grant(world.admin, world.grants["agent2_read"])
    world.coord.revoke_grant(world.admin, world.grants["agent2"])
    with pytest.raises(NotFound):
        world.coord.receipt(reader, receipt.id)
    with pytest.raises(NotFound):
        world.coord.receipts(reader, cand.id)
    with pytest.raises(NotFound):
        world.coord.task_view(reader, task.id)  # the completion receipt shows on the task view
    world.coord.grant(world.admin, world.project_id, reader.id, ["read"], ["**"])  # granted again
    assert world.coord.receipt(reader, receipt.id).id == receipt.id
