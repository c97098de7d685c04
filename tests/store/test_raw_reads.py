"""The prepared-SQL reads of an agent's cycle (`store/_raw`) against the SQLAlchemy reads they
replaced, on varied ledgers and on both back-ends: the same rows, the same order, the same
values and types."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from studiolo import CompletionRejected
from studiolo.core.model import Action, Attempt, Grant, Principal
from studiolo.store import Tx
from studiolo.store import schema as s
from studiolo.store.audit import _event_of
from studiolo.store.content import candidate_of
from studiolo.store.evidence import _receipt
from studiolo.store.work import _attempt, _completion, _task
from tests.world import FakeClock, World, build_world

UNKNOWN = ["tsk_nosuchthing", "att_nosuchthing", "cnd_nosuchthing", "rcp_nosuchthing"]


@pytest.fixture(params=[1, 2])
def ledger(request: pytest.FixtureRequest, store_url: str, tmp_path: Path) -> Iterator[World]:
    """A project with tasks in every state: open, claimed (some several times), with
    candidates of equal and different times, passing and failing receipts, accepted and
    refused completions; the shape varies with the seed."""
    rng = random.Random(request.param)
    clock = FakeClock()
    w = build_world(tmp_path, clock, url=store_url)
    for n in range(6):
        task = w.new_task(f"task {n}")
        if n == 0:
            continue  # open, never claimed
        attempt = w.coord.claim(w.agent, task.id)
        if rng.random() < 0.5:
            attempt = w.coord.reassign(w.admin, task.id, w.agent2.id)
        cands = []
        for k in range(rng.randint(1 if n < 3 else 0, 3)):
            if rng.random() < 0.5:
                clock.advance(1.5)  # else several candidates share a created_at
            cands.append(
                w.candidate(attempt, {f"src/t{n}/{k}.txt": f"{n}.{k}".encode()}, who=_owner(w, attempt))
            )
        for c in cands[:-1]:
            w.receipt(c, rng.choice(["pass", "fail"]))
        if n == 1 or (n > 2 and cands and rng.random() < 0.5):  # accepted
            w.complete(task, attempt, cands[-1], [w.receipt(cands[-1], "pass").id], who=_owner(w, attempt))
        elif n == 2 or (cands and rng.random() < 0.5):  # refused, audited about the task
            failing = w.receipt(cands[-1], "fail")
            with pytest.raises(CompletionRejected):
                w.complete(task, attempt, cands[-1], [failing.id], who=_owner(w, attempt))
        clock.advance(0.25)
    yield w
    w.coord.store.dispose()


def _owner(w: World, attempt: Attempt) -> Principal:
    return w.agent if attempt.principal_id == w.agent.id else w.agent2


def _all(tx: Tx, table: Any, *order: Any) -> list[Any]:
    return list(tx.conn.execute(select(table).order_by(*order)))


def test_task_attempt_and_completion_reads_match_sqlalchemy(ledger: World) -> None:
    def check(tx: Tx) -> None:
        tasks = {r.id: _task(r) for r in _all(tx, s.tasks, s.tasks.c.id)}
        attempts = {r.id: _attempt(r) for r in _all(tx, s.attempts, s.attempts.c.id)}
        completions = {r.task_id: _completion(r) for r in _all(tx, s.completions, s.completions.c.id)}
        assert len(tasks) > 5 and attempts and completions
        for tid, task in tasks.items():
            assert tx.work.task(tid) == task
            assert tx.work.attempts(tid) == sorted(
                (a for a in attempts.values() if a.task_id == tid), key=lambda a: a.fence
            )
            assert tx.work.completion_of_task(tid) == completions.get(tid)
        for aid, attempt in attempts.items():
            assert tx.work.attempt(aid) == attempt
            assert tx.work.attempt_and_task(aid) == (attempt, tasks[attempt.task_id])
        for ident in UNKNOWN:
            assert tx.work.task(ident) is None and tx.work.attempt(ident) is None
            assert tx.work.attempt_and_task(ident) is None and tx.work.candidate_and_task(ident) is None
            assert tx.work.completion_of_task(ident) is None and tx.work.attempts(ident) == []

    ledger.coord.store.read(check)


def test_candidate_and_receipt_reads_match_sqlalchemy(ledger: World) -> None:
    def check(tx: Tx) -> None:
        c = s.candidates.c
        cands = [(r.project_id, candidate_of(r)) for r in _all(tx, s.candidates, c.created_at, c.id)]
        receipts = [_receipt(r) for r in _all(tx, s.receipts, s.receipts.c.created_at, s.receipts.c.id)]
        assert cands and receipts
        for project_id, cand in cands:
            assert tx.content.candidate(cand.id) == (project_id, cand)
            assert tx.work.candidate_and_task(cand.id) == (cand, tx.work.task(cand.task_id))
            assert tx.evidence.receipts_of_candidate(cand.id) == [
                r for r in receipts if r.candidate_id == cand.id
            ]
        for tid in {cand.task_id for _, cand in cands}:
            of_task = [cand for _, cand in cands if cand.task_id == tid]
            assert tx.content.candidates_of_task(tid) == of_task
            assert tx.evidence.receipts_of_task(tid) == [
                r for cand in of_task for r in receipts if r.candidate_id == cand.id
            ]
        for aid in {cand.attempt_id for _, cand in cands}:
            assert tx.content.candidates_of_attempt(aid) == [
                cand for _, cand in cands if cand.attempt_id == aid
            ]
        for r in receipts:
            assert tx.evidence.receipt(r.id) == r
        for ident in UNKNOWN:
            assert tx.content.candidate(ident) is None and tx.evidence.receipt(ident) is None
            assert tx.evidence.receipts_of_task(ident) == [] and tx.content.candidates_of_task(ident) == []

    ledger.coord.store.read(check)


def test_events_of_a_subject_match_sqlalchemy(ledger: World) -> None:
    def check(tx: Tx) -> None:
        events = [_event_of(r) for r in _all(tx, s.events, s.events.c.seq)]
        subjects = {e.subject for e in events if e.subject}
        assert any(e.kind == "completion.rejected" for e in events) or len(subjects) > 10
        for subject in [*sorted(subjects), *UNKNOWN]:
            for project_id in (ledger.project_id, "prj_elsewhere"):
                mine = [e for e in events if e.subject == subject and e.project_id == project_id]
                assert tx.audit.events(project_id, subject=subject, limit=10_000) == mine
                assert tx.audit.events(project_id, subject=subject, limit=2) == mine[:2]
                after = mine[0].seq if mine else 0
                assert tx.audit.events(project_id, after=after, subject=subject) == mine[1:]

    ledger.coord.store.read(check)


def test_blob_gaps(ledger: World) -> None:
    other = ledger.coord.create_project(ledger.admin, "other").id
    held = ledger.put(b"held here")
    stray = ledger.coord.put_blob(ledger.admin, b"uploaded by an admin, no project")  # no ref
    absent = "sha256:" + "e" * 64

    def check(tx: Tx) -> None:
        wanted = [absent, held, stray, held]
        assert tx.content.blob_gaps(ledger.project_id, wanted) == ([absent], sorted([absent, stray]))
        assert tx.content.blob_gaps(other, wanted) == ([absent], sorted([absent, held, stray]))
        assert tx.content.blob_gaps(None, wanted) == ([absent], [])
        assert tx.content.blob_gaps(ledger.project_id, []) == ([], [])
        assert tx.content.unreadable_blobs(other, [held]) == [held]
        assert tx.content.has_blob(held) and not tx.content.has_blob(absent)

    ledger.coord.store.read(check)


def test_a_blob_uploaded_again_is_staged_anew_and_refs_are_not_doubled(ledger: World) -> None:
    store, clock = ledger.coord.store, ledger.clock
    digest = ledger.put(b"twice")
    first = store.read(lambda tx: tx.conn.execute(select(s.blobs.c.created_at)).all())
    clock.advance(60)
    assert ledger.put(b"twice") == digest

    def rows(tx: Tx) -> tuple[Any, ...]:
        at = tx.conn.execute(select(s.blobs.c.created_at).where(s.blobs.c.digest == digest)).scalar_one()
        refs = tx.conn.execute(select(s.blob_refs).where(s.blob_refs.c.digest == digest)).all()
        return at, len(refs)

    at, refs = store.read(rows)
    assert at == pytest.approx(clock()) and refs == 1 and first


def test_live_grants_are_read_once_per_transaction_and_follow_its_own_grant_writes(ledger: World) -> None:
    w = ledger

    def run(tx: Tx) -> None:
        before = tx.access.grants_of(w.agent.id, w.project_id)
        assert before == tx.access.grants_of(w.agent.id, w.project_id)
        assert before is not tx.access.grants_of(w.agent.id, w.project_id)  # a fresh list each time
        tx.access.revoke_grant(w.grants["agent"], tx.now)
        after = tx.access.grants_of(w.agent.id, w.project_id)
        assert [g.id for g in after] == [g.id for g in before if g.id != w.grants["agent"]]
        extra = Grant("gnt_addedintx", w.project_id, w.agent.id, frozenset({Action.READ}), ("x/**",), tx.now)
        tx.access.add_grant(extra)
        assert [g.id for g in tx.access.grants_of(w.agent.id, w.project_id)] == [
            *(g.id for g in after),
            extra.id,
        ]
        raise _Undo

    with pytest.raises(_Undo):
        w.coord.store.write(run)
    assert w.coord.store.read(lambda tx: len(tx.access.grants_of(w.agent.id, w.project_id))) == 2


class _Undo(Exception):
    """Roll the write back."""


def test_project_of_reads_on_a_pooled_connection_and_leaves_it_as_it_was(ledger: World) -> None:
    store = ledger.coord.store

    def rows(tx: Tx) -> list[tuple[str, str, str | None]]:
        out = [("task", str(r.id), str(r.project_id)) for r in _all(tx, s.tasks, s.tasks.c.id)]
        joined = select(s.attempts.c.id, s.tasks.c.project_id).join(
            s.tasks, s.tasks.c.id == s.attempts.c.task_id
        )
        out += [("attempt", str(i), str(p)) for i, p in tx.conn.execute(joined)]
        out += [
            ("candidate", str(r.id), str(r.project_id)) for r in _all(tx, s.candidates, s.candidates.c.id)
        ]
        return out + [(kind, ident, None) for kind in ("task", "attempt", "candidate") for ident in UNKNOWN]

    expected = store.read(rows)
    store._projects.clear()
    assert [(kind, ident, store.project_of(kind, ident)) for kind, ident, _ in expected] == expected
    pooled = store.engine.raw_connection()
    driver: Any = pooled.dbapi_connection
    try:  # the connection went back to the pool as the pool lends it: not autocommitting
        assert store.dialect == "sqlite" or driver.autocommit is False
    finally:
        pooled.close()
    ledger.new_task("after the lookups")  # and a write still runs on it
