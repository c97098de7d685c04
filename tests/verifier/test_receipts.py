"""The evidence store's entrance: only admitted verifiers' genuine, bound receipts get in,
and a receipt that stops being trustworthy later stops counting at completion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import text

from studiolo._exceptions import CompletionRejected, InvalidRequest, NotAuthorized, NotFound, StudioloError
from studiolo.core.model import Attempt, Candidate, Principal, Task
from studiolo.keys import b64u, b64u_decode, public_key_text, sign, verify
from tests.world import World


@pytest.fixture
def claimed(world: World) -> tuple[Task, Attempt, Candidate]:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    return task, attempt, cand


def _body(world: World, cand: Candidate, **override: Any) -> dict[str, Any]:
    task = world.coord.task_view(world.admin, cand.task_id).task
    body = {
        "task_id": cand.task_id,
        "attempt_id": cand.attempt_id,
        "contract_hash": task.contract_hash,
        "candidate_digest": cand.digest,
        "dependency_digest": cand.dependency_digest,
        "criterion": "tests",
        "checker": "unit@1",
        "result": "pass",
        "issued_at": 1_800_000_000_000,
        "issuer": world.verifier.id,
        "log_digest": None,
    }
    body.update(override)
    return body


def _verifier(world: World, name: str, admitted: bool) -> tuple[Principal, Ed25519PrivateKey]:
    key = Ed25519PrivateKey.generate()
    who = world.coord.add_principal(world.admin, world.project_id, name, "verifier", public_key_text(key))
    world.coord.grant(world.admin, world.project_id, who.principal.id, ["read", "verify"], ["**"])
    if admitted:
        world.coord.register_checker(
            world.admin,
            world.project_id,
            "unit",
            "1",
            "command",
            {"argv": ["true"]},
            [world.verifier.id, who.principal.id],
        )
    return who.principal, key


def _reason(exc: pytest.ExceptionInfo[StudioloError]) -> str:
    return exc.value.reason


def test_a_genuine_receipt_is_recorded_once(world: World, claimed: tuple[Task, Attempt, Candidate]) -> None:
    task, attempt, cand = claimed
    body = _body(world, cand)
    sig = sign(world.verifier_key, body)
    first = world.coord.submit_receipt(world.verifier, cand.id, body, sig)
    again = world.coord.submit_receipt(world.verifier, cand.id, body, sig)
    assert first.id == again.id
    assert [r.id for r in world.coord.receipts(world.agent, cand.id)] == [first.id]
    events = [e for e in world.coord.events(world.admin, world.project_id) if e.kind == "receipt.recorded"]
    assert len(events) == 1 and events[0].data["result"] == "pass"
    assert world.complete(task, attempt, cand, [first.id]).completion.candidate_id == cand.id


def test_forged_signature_is_rejected(world: World, claimed: tuple[Task, Attempt, Candidate]) -> None:
    cand = claimed[2]
    with pytest.raises(InvalidRequest) as exc:
        world.receipt(cand, key=Ed25519PrivateKey.generate())
    assert _reason(exc) == "signature_invalid"
    with pytest.raises(InvalidRequest) as garbage:
        world.coord.submit_receipt(world.verifier, cand.id, _body(world, cand), "A" * 86)
    assert _reason(garbage) == "signature_invalid"


@pytest.mark.parametrize(
    ("field", "value"),
    [("result", "fail"), ("issued_at", 1), ("criterion", "tests2"), ("log_digest", "sha256:" + "0" * 64)],
)
def test_an_altered_body_breaks_the_signature(
    world: World, claimed: tuple[Task, Attempt, Candidate], field: str, value: Any
) -> None:
    cand = claimed[2]
    body = _body(world, cand)
    sig = sign(world.verifier_key, body)
    with pytest.raises(InvalidRequest) as exc:
        world.coord.submit_receipt(world.verifier, cand.id, {**body, field: value}, sig)
    assert _reason(exc) == "signature_invalid"


def test_a_second_spelling_of_a_signature_is_rejected(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    """base64 has spare bits and a lenient decoder: one signature must have one spelling,
    or one observation gets several receipt ids."""
    cand = claimed[2]
    body = _body(world, cand)
    sig = sign(world.verifier_key, body)
    assert sig[-1] in "AQgw" and b64u(b64u_decode(sig)) == sig
    twin = sig[:-1] + chr(ord(sig[-1]) + 1)  # differs only in bits the decoder drops
    for spelling in (twin, sig + "=="):
        assert verify(world.verifier.public_key or "", body, spelling)  # the lenient check says yes
        with pytest.raises(InvalidRequest) as exc:
            world.coord.submit_receipt(world.verifier, cand.id, body, spelling)
        assert _reason(exc) == "signature_invalid"


def test_a_receipt_replayed_for_another_candidate_is_rejected(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    task, attempt, cand = claimed
    good = world.receipt(cand)
    other = world.candidate(attempt, {"src/answer.txt": b"41\n"}, deps={"src/input.txt": 1})
    with pytest.raises(InvalidRequest) as exc:
        world.coord.submit_receipt(world.verifier, other.id, good.signed_body(), good.signature)
    assert _reason(exc) == "evidence_not_bound"
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, other, [good.id])
    assert refused.value.failed == ("evidence_not_bound", "evidence_missing")


def test_a_receipt_for_another_attempt_or_contract_is_rejected(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    cand = claimed[2]
    for override in (
        {"attempt_id": "att_" + "0" * 32},
        {"task_id": "tsk_" + "0" * 32},
        {"contract_hash": "sha256:" + "1" * 64},
        {"dependency_digest": "sha256:" + "2" * 64},
        {"criterion": "lint"},
    ):
        body = _body(world, cand, **override)
        with pytest.raises(InvalidRequest) as exc:
            world.coord.submit_receipt(world.verifier, cand.id, body, sign(world.verifier_key, body))
        assert _reason(exc) == "evidence_not_bound", override


def test_wrong_key_and_borrowed_identity_are_rejected(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    cand = claimed[2]
    other, other_key = _verifier(world, "ci-2", admitted=True)
    body = _body(world, cand)
    with pytest.raises(InvalidRequest) as wrong_key:  # ci's name, ci-2's key
        world.coord.submit_receipt(world.verifier, cand.id, body, sign(other_key, body))
    assert _reason(wrong_key) == "signature_invalid"
    with pytest.raises(NotAuthorized) as borrowed:  # ci-2 posting what ci (truly) signed
        world.coord.submit_receipt(other, cand.id, body, sign(world.verifier_key, body))
    assert _reason(borrowed) == "verifier_not_admitted"
    own = _body(world, cand, issuer=other.id)
    assert world.coord.submit_receipt(other, cand.id, own, sign(other_key, own)).issuer_id == other.id


def test_a_checker_not_admitted_cannot_report(world: World, claimed: tuple[Task, Attempt, Candidate]) -> None:
    cand = claimed[2]
    outsider, outsider_key = _verifier(world, "ci-3", admitted=False)
    body = _body(world, cand, issuer=outsider.id)
    with pytest.raises(NotAuthorized) as exc:
        world.coord.submit_receipt(outsider, cand.id, body, sign(outsider_key, body))
    assert _reason(exc) == "verifier_not_admitted"
    unknown = _body(world, cand, checker="unit@2")
    with pytest.raises(InvalidRequest) as exc2:
        world.coord.submit_receipt(world.verifier, cand.id, unknown, sign(world.verifier_key, unknown))
    assert _reason(exc2) == "unknown_checker"


def test_workers_cannot_create_receipts(world: World, claimed: tuple[Task, Attempt, Candidate]) -> None:
    cand = claimed[2]
    for worker in (world.agent, world.human):
        body = _body(world, cand, issuer=worker.id)
        with pytest.raises(NotAuthorized) as exc:
            world.coord.submit_receipt(worker, cand.id, body, sign(world.verifier_key, body))
        assert _reason(exc) == "verifier_not_admitted"
    assert world.coord.receipts(world.agent, cand.id) == []


def test_a_log_must_be_uploaded_first(world: World, claimed: tuple[Task, Attempt, Candidate]) -> None:
    cand = claimed[2]
    body = _body(world, cand, log_digest="sha256:" + "3" * 64)
    with pytest.raises(InvalidRequest) as exc:
        world.coord.submit_receipt(world.verifier, cand.id, body, sign(world.verifier_key, body))
    assert _reason(exc) == "blob_missing"


def test_receipts_on_invisible_candidates_are_not_found(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    with pytest.raises(NotFound):
        world.coord.submit_receipt(world.verifier, "cnd_nothere", _body(world, claimed[2]), "A" * 86)


def test_a_receipt_altered_in_the_store_no_longer_counts(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    task, attempt, cand = claimed
    failed = world.receipt(cand, result="fail")
    tampered = {**failed.signed_body(), "result": "pass"}
    with world.coord.store.engine.begin() as conn:
        conn.execute(
            text("UPDATE receipts SET body = :b WHERE id = :i"), {"b": json.dumps(tampered), "i": failed.id}
        )
    assert world.coord.receipt(world.agent, failed.id).result.value == "pass"
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, cand, [failed.id])
    assert refused.value.failed == ("evidence_untrusted", "evidence_missing")


def test_made_up_receipt_ids_are_untrusted(world: World, claimed: tuple[Task, Attempt, Candidate]) -> None:
    task, attempt, cand = claimed
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, cand, ["rcp_" + "a" * 32])
    assert refused.value.failed == ("evidence_untrusted", "evidence_missing")


def test_dropping_a_verifier_or_its_key_withdraws_its_receipts(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    task, attempt, cand = claimed
    good = world.receipt(cand)
    world.coord.register_checker(world.admin, world.project_id, "unit", "1", "command", {}, [])
    with pytest.raises(CompletionRejected) as dropped:
        world.complete(task, attempt, cand, [good.id])
    assert dropped.value.failed == ("evidence_untrusted", "evidence_missing")
    world.coord.register_checker(
        world.admin, world.project_id, "unit", "1", "command", {}, [world.verifier.id]
    )
    new_key = Ed25519PrivateKey.generate()
    world.coord.set_public_key(world.admin, world.verifier.id, public_key_text(new_key))
    with pytest.raises(CompletionRejected) as rotated:
        world.complete(task, attempt, cand, [good.id])
    assert rotated.value.failed == ("evidence_untrusted", "evidence_missing")
