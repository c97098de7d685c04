"""Issue 9 (Low): hostile numbers at the HTTP edge get a 4xx problem, never a 500."""

from __future__ import annotations

import pytest

from studiolo.keys import sign
from tests.faces.helpers import Actors
from tests.faces.test_http_api import assert_problem, raw
from tests.world import World


@pytest.mark.parametrize("lease", [True, "600", 1e-300, 0.5, -1, 10**10])
def test_strict_types_lease_seconds(actors: Actors, world: World, lease: object) -> None:
    task = world.new_task()
    with raw(actors, actors.tokens["agent"]) as http:
        r = http.post(f"/v1/tasks/{task.id}/attempts", json={"lease_seconds": lease})
        assert_problem(r, 422, "invalid_request")
        assert http.post(f"/v1/tasks/{task.id}/attempts", json={"lease_seconds": 600}).status_code == 201


def test_strict_types_receipt_issued_at(actors: Actors, world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"42\n"})
    body = {
        "task_id": task.id,
        "attempt_id": att.id,
        "contract_hash": task.contract_hash,
        "candidate_digest": cand.digest,
        "dependency_digest": cand.dependency_digest,
        "criterion": "tests",
        "checker": "unit@1",
        "result": "pass",
        "issued_at": 1,
        "issuer": world.verifier.id,
        "log_digest": None,
    }
    sig = sign(world.verifier_key, body)
    with raw(actors, actors.tokens["verifier"]) as http:
        for issued in (2**53 + 1, 10**30, True, 1.5):
            bad = {**body, "issued_at": issued}
            r = http.post(f"/v1/candidates/{cand.id}/receipts", json={"body": bad, "signature": sig})
            assert_problem(r, 400, "invalid_request")
        ok = http.post(f"/v1/candidates/{cand.id}/receipts", json={"body": body, "signature": sig})
        assert ok.status_code in (200, 201), ok.text
