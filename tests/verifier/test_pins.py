"""Receipt signatures are verified once, at ingest, and pinned to the kid of the issuer's key
(`receipts.issuer_kid`). A completion trusts the pin while that key is still the issuer's and
the row is still the one that was verified; older rows without a pin are verified byte for
byte."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import text

from studiolo import CompletionRejected
from studiolo.core.model import Attempt, Candidate, Task
from studiolo.keys import key_id, public_key_text, sign
from tests.world import World

ANSWER = {"src/answer.txt": b"42\n"}
UNTRUSTED = ("evidence_untrusted", "evidence_missing")


@pytest.fixture
def claimed(world: World) -> tuple[Task, Attempt, Candidate]:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    return task, attempt, world.candidate(attempt, ANSWER)


def _sql(world: World, sql: str, **params: object) -> list[tuple[object, ...]]:
    with world.coord.store.engine.begin() as conn:
        result = conn.execute(text(sql), params)
        return [tuple(r) for r in result] if result.returns_rows else []


def _refused(world: World, claimed: tuple[Task, Attempt, Candidate], ids: list[str]) -> tuple[str, ...]:
    task, attempt, cand = claimed
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, cand, ids)
    return tuple(refused.value.failed)


def test_ingest_pins_the_kid_of_the_key_that_verified(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    receipt = world.receipt(claimed[2])
    assert world.verifier.public_key is not None
    pinned = _sql(world, "SELECT issuer_kid FROM receipts WHERE id = :i", i=receipt.id)
    assert pinned == [(key_id(world.verifier.public_key),)]


def test_a_new_issuer_key_withdraws_pinned_receipts_and_the_old_one_restores_them(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    receipt = world.receipt(claimed[2])
    old = world.verifier.public_key
    assert old is not None
    new = public_key_text(Ed25519PrivateKey.generate())
    world.coord.set_public_key(world.admin, world.verifier.id, new)
    assert _refused(world, claimed, [receipt.id]) == UNTRUSTED
    world.coord.set_public_key(world.admin, world.verifier.id, old)
    task, attempt, cand = claimed
    assert world.complete(task, attempt, cand, [receipt.id]).completion.receipt["evidence"] == [receipt.id]


def test_a_pinned_row_whose_signature_was_swapped_no_longer_counts(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    cand = claimed[2]
    good = world.receipt(cand)
    body = {**good.signed_body(), "issued_at": good.issued_at + 1}
    other = sign(world.verifier_key, body)  # a real signature, of other bytes
    _sql(world, "UPDATE receipts SET signature = :s WHERE id = :i", s=other, i=good.id)
    assert _refused(world, claimed, [good.id]) == UNTRUSTED


def test_a_row_from_before_pins_is_verified_byte_for_byte(
    world: World, claimed: tuple[Task, Attempt, Candidate]
) -> None:
    cand = claimed[2]
    legacy = world.receipt(cand)
    _sql(world, "UPDATE receipts SET issuer_kid = NULL WHERE id = :i", i=legacy.id)
    task, attempt, _ = claimed
    tampered = {**legacy.signed_body(), "issued_at": legacy.issued_at + 1}
    _sql(world, "UPDATE receipts SET body = :b WHERE id = :i", b=json.dumps(tampered), i=legacy.id)
    assert _refused(world, claimed, [legacy.id]) == UNTRUSTED
    original = json.dumps(legacy.signed_body())
    _sql(world, "UPDATE receipts SET body = :b WHERE id = :i", b=original, i=legacy.id)
    assert world.complete(task, attempt, cand, [legacy.id]).completion.receipt["evidence"] == [legacy.id]


def test_a_reuse_link_is_pinned_and_bound_to_its_source(world: World) -> None:
    first = world.new_task("first", allow_evidence_reuse=True)
    c1 = world.candidate(world.coord.claim(world.agent, first.id), ANSWER)
    source = world.receipt(c1)
    second = world.new_task("second", allow_evidence_reuse=True)
    a2 = world.coord.claim(world.agent2, second.id)
    c2 = world.candidate(a2, ANSWER, who=world.agent2)
    link = world.coord.reuse_receipt(world.agent2, c2.id, source.id)
    assert world.verifier.public_key is not None
    kid = key_id(world.verifier.public_key)
    assert _sql(world, "SELECT issuer_kid FROM receipts WHERE id = :i", i=link.id) == [(kid,)]
    # A link that claims another source is not the link that was verified.
    _sql(world, "UPDATE receipts SET reused_from = :s WHERE id = :i", s="rcp_" + "0" * 32, i=link.id)
    with pytest.raises(CompletionRejected) as refused:
        world.complete(second, a2, c2, [link.id], who=world.agent2)
    assert tuple(refused.value.failed) == UNTRUSTED
    _sql(world, "UPDATE receipts SET reused_from = :s WHERE id = :i", s=source.id, i=link.id)
    outcome = world.complete(second, a2, c2, [link.id], who=world.agent2)
    assert outcome.completion.receipt["evidence"] == [link.id]
