"""Retention, legal holds and deletion of bytes on request, rule by rule (docs/operations.md,
"Retention and deletion"): a sweep deletes only what is past its period, a hold wins over
retention and over deletion, deleted bytes answer `bytes_deleted` and the audit chain still
verifies."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studiolo._exceptions import BytesDeleted, Conflict, InvalidRequest, NotAuthorized, NotFound
from studiolo.core.model import Candidate, Principal
from studiolo.keys import verify
from tests.world import World, add_project, build_world

DAY = 86400.0


def _project_admin(world: World) -> Principal:
    c = world.coord
    boss = c.add_principal(world.admin, world.project_id, "boss", "human").principal
    c.grant(world.admin, world.project_id, boss.id, ["admin", "read"], ["**"])
    return boss


def _kinds(world: World, kind: str) -> list[dict[str, object]]:
    events = world.coord.store.read(lambda tx: list(tx.audit.iter_all()))
    return [{"actor": e.actor, "subject": e.subject, **e.data} for e in events if e.kind == kind]


def _rejected_candidate(world: World, data: bytes) -> Candidate:
    """A candidate whose attempt was released: it never becomes authoritative."""
    attempt = world.coord.claim(world.agent, world.new_task().id)
    cand = world.candidate(attempt, {"src/answer.txt": data})
    world.coord.release(world.agent, attempt.id)
    return cand


def _accepted(world: World, data: bytes) -> Candidate:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": data})
    world.complete(task, attempt, cand, [world.receipt(cand).id])
    return cand


def test_only_a_project_admin_sets_retention_and_it_is_audited(world: World) -> None:
    c, boss = world.coord, _project_admin(world)
    with pytest.raises(NotAuthorized):
        c.set_retention(world.agent, world.project_id, {"candidates": DAY})
    for bad in ({"candidates": -1.0}, {"audit": 1.0}, {"verifier_logs": float("nan")}):
        with pytest.raises(InvalidRequest):
            c.set_retention(boss, world.project_id, bad)
    policy = c.set_retention(boss, world.project_id, {"candidates": 30 * DAY})
    policy = c.set_retention(boss, world.project_id, {"verifier_logs": DAY})  # the other period stays
    assert (policy.candidates, policy.verifier_logs, policy.delegations) == (30 * DAY, DAY, None)
    assert c.retention(world.agent, world.project_id).policy == policy  # every member may read it
    (first, second) = _kinds(world, "retention.set")
    assert first["actor"] == boss.id and second["verifier_logs"] == DAY and second["candidates"] == 30 * DAY


def test_a_sweep_deletes_only_never_authoritative_bytes_past_their_period(world: World) -> None:
    c = world.coord
    c.set_retention(world.admin, world.project_id, {"candidates": 7 * DAY})
    old = _rejected_candidate(world, b"an abandoned try\n")
    shared = _rejected_candidate(world, b"42\n")  # the same bytes as the accepted one below
    accepted = _accepted(world, b"42\n")
    world.clock.advance(8 * DAY)
    young = _rejected_candidate(world, b"a try from today\n")

    (report,) = c.sweep_retention(world.admin)
    assert (
        report.swept == {"candidates": 2} and report.blobs == 1 and report.bytes == len(b"an abandoned try\n")
    )
    gone = old.files["src/answer.txt"]
    assert gone is not None
    with pytest.raises(BytesDeleted, match=r"bytes deleted \d{4}-.*by retention: retention: candidates"):
        c.get_blob(world.agent, gone)
    for kept in (shared, accepted, young):
        digest = kept.files["src/answer.txt"]
        assert digest is not None and c.get_blob(world.agent, digest)
    assert c.sweep_retention(world.admin) == [report.__class__(world.project_id)]  # nothing more
    assert _kinds(world, "retention.swept")[0]["swept"] == {"candidates": 2}
    assert c.verify_audit().ok
    assert c.candidate(world.admin, old.id).digest == old.digest  # the record stays, its bytes went


def test_a_hold_wins_over_retention_until_released(world: World) -> None:
    c, boss = world.coord, _project_admin(world)
    c.set_retention(boss, world.project_id, {"candidates": DAY})
    held = _rejected_candidate(world, b"evidence in a dispute\n")
    other = _rejected_candidate(world, b"nobody cares\n")
    hold = c.place_hold(boss, world.project_id, held.task_id, "litigation 2026-17")
    world.clock.advance(2 * DAY)
    (report,) = c.sweep_retention(boss, world.project_id)
    assert report.swept == {"candidates": 1}
    digest = held.files["src/answer.txt"]
    assert digest is not None and c.get_blob(world.agent, digest) == b"evidence in a dispute\n"
    with pytest.raises(BytesDeleted):
        c.get_blob(world.agent, other.files["src/answer.txt"] or "")

    project_hold = c.place_hold(boss, world.project_id, None, "regulator's request")
    c.release_hold(boss, hold.id, "settled")
    assert c.sweep_retention(boss, world.project_id)[0].swept == {}  # the project hold still holds
    with pytest.raises(Conflict):
        c.release_hold(boss, hold.id, "again")
    c.release_hold(boss, project_hold.id, "closed")
    assert c.sweep_retention(boss, world.project_id)[0].swept == {"candidates": 1}
    with pytest.raises(BytesDeleted):
        c.get_blob(world.agent, digest)
    placed, released = _kinds(world, "hold.placed"), _kinds(world, "hold.released")
    assert [(e["subject"], e["reason"]) for e in placed] == [
        (hold.id, "litigation 2026-17"),
        (project_hold.id, "regulator's request"),
    ]
    assert [e["reason"] for e in released] == ["settled", "closed"]
    assert c.verify_audit().ok


def test_holds_need_an_admin_a_reason_and_a_task_of_the_project(world: World, tmp_path: Path) -> None:
    c = world.coord
    task = world.new_task()
    with pytest.raises(NotAuthorized):
        c.place_hold(world.agent, world.project_id, task.id, "mine")
    with pytest.raises(InvalidRequest):
        c.place_hold(world.admin, world.project_id, task.id, "  ")
    elsewhere = add_project(c, world.admin, world.clock, "elsewhere")
    with pytest.raises(NotFound):
        c.place_hold(world.admin, elsewhere.project_id, task.id, "a task of another project")


def test_verifier_logs_age_out_but_the_receipt_stays(world: World) -> None:
    c = world.coord
    c.set_retention(world.admin, world.project_id, {"verifier_logs": 60.0})
    task = world.new_task()
    attempt = c.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    log = c.put_blob(world.verifier, b"PASSED 3 tests\n")
    receipt = world.receipt(cand, log_digest=log)
    world.clock.advance(61.0)  # within the lease
    assert c.sweep_retention(world.admin)[0].swept == {"verifier_logs": 1}
    with pytest.raises(BytesDeleted):
        c.get_blob(world.verifier, log)
    assert c.receipt(world.agent, receipt.id).log_digest == log
    world.complete(task, attempt, cand, [receipt.id])  # the evidence still counts: it binds digests


def test_deleting_a_published_secret_keeps_receipts_and_the_chain_verifiable(world: World) -> None:
    c, boss = world.coord, _project_admin(world)
    cand = _accepted(world, b"AWS_SECRET=hunter2\n")
    secret = cand.files["src/answer.txt"]
    assert secret is not None
    with pytest.raises(NotAuthorized):
        c.delete_bytes(world.agent, world.project_id, secret, "a leaked key")
    with pytest.raises(InvalidRequest):
        c.delete_bytes(boss, world.project_id, secret, "")
    stone = c.delete_bytes(boss, world.project_id, secret, "a leaked key")
    assert (stone.digest, stone.size, stone.paths, stone.deleted_by) == (
        secret,
        len(b"AWS_SECRET=hunter2\n"),
        ("src/answer.txt",),
        boss.id,
    )
    now = c.read_artifact(world.agent, world.project_id, "src/answer.txt")
    assert now.artifact.digest is None and now.data is None  # going forward the path is deleted
    with pytest.raises(BytesDeleted, match=f"by {boss.id}: a leaked key"):  # its history names the bytes
        c.read_artifact(world.agent, world.project_id, "src/answer.txt", now.artifact.revision - 1)
    with pytest.raises(BytesDeleted):
        c.get_blob(world.agent, secret)
    with pytest.raises(BytesDeleted):  # a second request finds the tombstone
        c.delete_bytes(boss, world.project_id, secret, "again")
    view = c.task_view(world.admin, cand.task_id)
    assert view.completion is not None
    jwks = c.jwks()["keys"]
    assert any(verify(k["x"], view.completion.receipt, view.completion.signature) for k in jwks), (
        "the completion receipt still verifies"
    )
    assert all(r.candidate_id == cand.id for r in view.receipts)
    assert c.verify_audit().ok
    (event,) = _kinds(world, "bytes.deleted")
    assert event["subject"] == secret and event["reason"] == "a leaked key" and event["actor"] == boss.id


def test_a_hold_wins_over_deletion_on_request(world: World) -> None:
    c, boss = world.coord, _project_admin(world)
    cand = _rejected_candidate(world, b"PRIVATE KEY\n")
    digest = cand.files["src/answer.txt"]
    assert digest is not None
    task_hold = c.place_hold(boss, world.project_id, cand.task_id, "incident review")
    with pytest.raises(Conflict) as refused:
        c.delete_bytes(boss, world.project_id, digest, "a leaked key")
    assert refused.value.reason == "legal_hold"
    c.release_hold(boss, task_hold.id, "review done")
    project_hold = c.place_hold(boss, world.project_id, None, "audit")
    with pytest.raises(Conflict):
        c.delete_bytes(boss, world.project_id, digest, "a leaked key")
    assert c.get_blob(world.agent, digest) == b"PRIVATE KEY\n"
    c.release_hold(boss, project_hold.id, "audit done")
    c.delete_bytes(boss, world.project_id, digest, "a leaked key")
    with pytest.raises(BytesDeleted):
        c.get_blob(world.agent, digest)


def test_bytes_another_project_holds_need_a_service_admin(world: World) -> None:
    c, boss = world.coord, _project_admin(world)
    other = add_project(c, world.admin, world.clock, "other")
    digest = world.put(b"shared bytes\n")
    other.put(b"shared bytes\n")
    with pytest.raises(NotAuthorized):
        c.delete_bytes(boss, world.project_id, digest, "mine")
    stone = c.delete_bytes(world.admin, world.project_id, digest, "everyone's")
    assert stone.project_id == world.project_id
    for w in (world, other):
        with pytest.raises(BytesDeleted):
            c.get_blob(w.agent, digest)
    assert c.verify_audit().ok


def test_serve_sweeps_on_a_timer_as_the_service(world: World) -> None:
    """The app's lifespan starts the sweeper; its sweeps are audited with no actor."""
    import time

    from starlette.testclient import TestClient

    from studiolo.faces.http.app import create_app
    from studiolo.settings import Settings

    c = world.coord
    c.set_retention(world.admin, world.project_id, {"candidates": 1.0})
    cand = _rejected_candidate(world, b"expires on the timer\n")
    world.clock.advance(5.0)
    app = create_app(c, Settings(database_url=c.store.url, git_dir="off", retention_sweep_seconds=0.05))
    with TestClient(app):
        deadline = time.monotonic() + 30
        while not _kinds(world, "retention.swept") and time.monotonic() < deadline:
            time.sleep(0.05)
    (swept, *_) = _kinds(world, "retention.swept")
    assert swept["actor"] is None and swept["swept"] == {"candidates": 1}
    with pytest.raises(BytesDeleted):
        c.get_blob(world.agent, cand.files["src/answer.txt"] or "")
    assert not app.state.sweeper.running  # stopped with the app


def test_the_independent_audit_checker_follows_a_deletion(world: World) -> None:
    """A deletion moves the paths that held the bytes to a new revision; a later completion
    that read the new revision is valid in the audit history as re-evaluated from the events."""
    from tests.auditcheck import check, load_deadlines, load_events

    c = world.coord
    cand = _accepted(world, b"SECRET=3\n")
    c.delete_bytes(world.admin, world.project_id, cand.files["src/answer.txt"] or "", "a leaked secret")
    task = world.new_task()
    attempt = c.claim(world.agent, task.id)
    now = c.read_revision(world.agent, world.project_id, "src/answer.txt")
    later = world.candidate(attempt, {"src/answer.txt": b"42\n"}, deps={"src/answer.txt": now})
    world.complete(task, attempt, later, [world.receipt(later).id])
    url = c.store.url
    assert check(load_events(url), load_deadlines(url)) == []


_ages = st.lists(
    st.tuples(st.integers(0, 20), st.sampled_from([b"a\n", b"b\n", b"c\n", b"d\n"]), st.booleans()),
    min_size=1,
    max_size=5,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cands=_ages, period=st.integers(0, 20), project_hold=st.booleans())
def test_a_sweep_deletes_exactly_what_the_model_says(
    tmp_path_factory: pytest.TempPathFactory,
    cands: list[tuple[int, bytes, bool]],
    period: int,
    project_hold: bool,
) -> None:
    """Candidates made at various times (some of held tasks), bytes shared between some: a
    sweep deletes a digest iff every candidate naming it is past the period and unheld."""
    w = build_world(tmp_path_factory.mktemp("sweep"))
    c = w.coord
    c.set_retention(w.admin, w.project_id, {"candidates": float(period)})
    made = []
    for _order, data, held in sorted(cands, key=lambda x: x[0]):  # one a second
        made.append((w.clock(), data, held, _rejected_candidate(w, data)))
        if held:
            c.place_hold(w.admin, w.project_id, made[-1][3].task_id, "held")
        w.clock.advance(1.0)
    if project_hold:
        c.place_hold(w.admin, w.project_id, None, "everything")
    start = made[0][0]
    # now = start + 20.5: half a second from every candidate's period end, so the clock
    # guard's nudges (a write's time is just after the last one's) cannot tip the model
    w.clock.advance(20.5 - (w.clock() - start))
    sweepable: dict[str, bool] = {}
    for made_at, _data, held, cand in made:
        digest = cand.files["src/answer.txt"] or ""
        expired = made_at + period <= w.clock()
        sweepable[digest] = sweepable.get(digest, True) and expired and not held and not project_hold
    c.sweep_retention(w.admin)
    for digest, gone in sweepable.items():
        try:
            c.get_blob(w.agent, digest)
            still = True
        except BytesDeleted:
            still = False
        assert still is not gone, (digest, gone)
    assert c.verify_audit().ok
    c.store.dispose()
