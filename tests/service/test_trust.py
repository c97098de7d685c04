"""Issue 9: which receipts count. Every receipt recorded for a candidate's bytes decides, cited
or not, and the task view applies the completion predicate's own trust rule."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo import CompletionRejected
from studiolo.core.facts import Fact
from studiolo.core.model import Principal
from studiolo.keys import public_key_text, sign
from tests.world import World


def _second_verifier(world: World) -> tuple[Principal, Ed25519PrivateKey]:
    key = Ed25519PrivateKey.generate()
    pid = world.project_id
    other = world.coord.add_principal(world.admin, pid, "ci-2", "verifier", public_key_text(key)).principal
    world.coord.grant(world.admin, pid, other.id, ["read", "verify"], ["**"])
    return other, key


def test_failing_receipt_cannot_be_hidden(world: World) -> None:
    """Finding: an agent reran a check until it passed and cited only the pass."""
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"41\n"})
    world.receipt(cand, result="fail")
    world.clock.advance(1)
    passing = world.receipt(cand, result="pass")
    with pytest.raises(CompletionRejected) as err:
        world.complete(task, att, cand, [passing.id])
    assert err.value.failed == ("evidence_failed",)
    # A twin candidate of the same attempt carries the same bytes: the fail follows them.
    twin = world.candidate(att, {"src/answer.txt": b"41\n"})
    assert twin.id != cand.id and twin.digest == cand.digest
    world.clock.advance(1)
    with pytest.raises(CompletionRejected) as err:
        world.complete(task, att, twin, [world.receipt(twin).id])
    assert err.value.failed == ("evidence_failed",)
    assert world.coord.task_view(world.admin, task.id).fact is Fact.CANDIDATE_PREPARED


def test_failing_receipt_of_other_bytes_does_not_count(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    wrong = world.candidate(att, {"src/answer.txt": b"41\n"})
    world.receipt(wrong, result="fail")
    right = world.candidate(att, {"src/answer.txt": b"42\n"})
    assert world.complete(task, att, right, [world.receipt(right).id]).completion.candidate_id == right.id


def test_failing_receipt_of_a_de_admitted_verifier_does_not_count(world: World) -> None:
    other, key = _second_verifier(world)
    pid = world.project_id
    world.coord.register_checker(
        world.admin, pid, "unit", "1", "command", {"argv": ["true"]}, [world.verifier.id, other.id]
    )
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
        "result": "fail",
        "issued_at": 1,
        "issuer": other.id,
        "log_digest": None,
    }
    world.coord.submit_receipt(other, cand.id, body, sign(key, body))
    passing = world.receipt(cand)
    world.coord.register_checker(
        world.admin, pid, "unit", "1", "command", {"argv": ["true"]}, [world.verifier.id]
    )
    assert world.coord.task_view(world.agent, task.id).fact is Fact.VERIFIED
    assert world.complete(task, att, cand, [passing.id]).completion.candidate_id == cand.id


def test_task_view_trust(world: World) -> None:
    """Finding: the view said `verified` after the checker's verifiers were de-admitted."""
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"42\n"})
    passing = world.receipt(cand)
    assert world.coord.task_view(world.agent, task.id).fact is Fact.VERIFIED
    pid = world.project_id
    world.coord.register_checker(world.admin, pid, "unit", "1", "command", {"argv": ["true"]}, [])
    assert world.coord.task_view(world.agent, task.id).fact is Fact.CANDIDATE_PREPARED
    with pytest.raises(CompletionRejected) as err:
        world.complete(task, att, cand, [passing.id])
    assert err.value.reason == "evidence_untrusted"
    # re-admitted: verified again; an uncited later fail takes it away, as it does at completion
    world.coord.register_checker(
        world.admin, pid, "unit", "1", "command", {"argv": ["true"]}, [world.verifier.id]
    )
    assert world.coord.task_view(world.agent, task.id).fact is Fact.VERIFIED
    world.clock.advance(1)
    world.receipt(cand, result="fail")
    assert world.coord.task_view(world.agent, task.id).fact is Fact.CANDIDATE_PREPARED
