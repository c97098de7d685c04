"""A write carries its own request id into its audit event even when another thread's group
commit runs it (the leader runs every queued write: the id must travel with the write)."""

from __future__ import annotations

import threading

from studiolo.observe.context import REQUEST_ID
from tests.world import World


def test_grouped_writes_each_record_their_own_request_id(world: World) -> None:
    start = threading.Barrier(16)
    made: dict[str, str] = {}  # task id → the request id its writer had

    def write(i: int) -> None:
        REQUEST_ID.set(f"req-{i:02d}")  # this thread's context only
        start.wait()
        for k in range(5):
            task = world.new_task(f"t{i}.{k}")
            made[task.id] = f"req-{i:02d}"

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    events = world.coord.store.read(lambda tx: tx.audit.events(world.project_id, limit=10_000))
    created = {e.subject: e.data.get("x_request_id") for e in events if e.kind == "task.created"}
    assert {t: created[t] for t in made} == made
    assert world.coord.store.backend.group.grouped > 0  # some writes did share a group (else no test)
    assert REQUEST_ID.get() is None  # the threads' ids never leaked here
    assert world.coord.verify_audit().ok
