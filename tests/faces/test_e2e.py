"""End to end over a real uvicorn socket: two agents and a verifier acting concurrently
through the API, the report's histories, idempotent replay, and the event stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import pytest

from studiolo._exceptions import CompletionRejected, Conflict, NotFound
from studiolo.api import responses as s
from studiolo.client import Client
from tests.faces.helpers import Actors, complete, new_task, submit, verify


def rejected(fn: Callable[[], object]) -> tuple[str, ...]:
    with pytest.raises(CompletionRejected) as info:
        fn()
    return info.value.failed


def test_two_agents_and_a_verifier_concurrently(live: Actors) -> None:
    admin, ver = live.client("admin"), live.client("verifier")
    tasks = [new_task(admin, f"task {i}") for i in range(6)]
    stop = threading.Event()
    done: dict[str, list[s.CompletionOut]] = {"agent": [], "agent2": []}
    errors: list[BaseException] = []

    def verifier() -> None:
        while not stop.is_set():
            for item in ver.verifications():
                verify(ver, live.world, ver.candidate(item.candidate_id))
            time.sleep(0.02)

    def agent(name: str) -> None:
        c = live.client(name)
        try:
            for task in tasks:
                try:
                    attempt = c.claim(task.id)
                except Conflict:
                    continue  # the other agent holds it
                cand = submit(c, attempt, {f"src/out-{task.id}.txt": name.encode()}, ("src/input.txt",))
                receipts: list[s.ReceiptOut] = []
                while not receipts:
                    receipts = c.receipts(cand.id)
                    time.sleep(0.02)
                done[name].append(complete(c, task, attempt, cand, [r.id for r in receipts]).completion)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(n,)) for n in ("agent", "agent2")]
    checker = threading.Thread(target=verifier)
    for t in (*threads, checker):
        t.start()
    for t in threads:
        t.join(60)
    stop.set()
    checker.join(10)
    assert not errors
    finished = done["agent"] + done["agent2"]
    assert sorted(c.task_id for c in finished) == sorted(t.id for t in tasks)
    versions = [c.commit_version for c in finished]
    assert len(set(versions)) == len(versions)
    assert all(t.status == "completed" for t in admin.tasks())
    assert live.world.coord.verify_audit().ok


def test_a_claim_race_has_one_winner(live: Actors) -> None:
    task = new_task(live.client("admin"))
    results: list[str] = []
    barrier = threading.Barrier(2)

    def claim(name: str) -> None:
        c = live.client(name)
        barrier.wait()
        try:
            c.claim(task.id)
            results.append("won")
        except Conflict as exc:
            results.append(exc.reason)

    threads = [threading.Thread(target=claim, args=(n,)) for n in ("agent", "agent2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) == ["task_already_claimed", "won"]


def test_obsolete_check(live: Actors) -> None:
    admin, agent, ver = live.client("admin"), live.client("agent"), live.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    first = submit(agent, attempt, {"src/answer.txt": b"41\n"})
    old = verify(ver, live.world, first)
    second = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    failed = rejected(lambda: complete(agent, task, attempt, second, [old.id]))
    assert failed == ("evidence_not_bound", "evidence_missing")
    fresh = verify(ver, live.world, second)
    assert not complete(agent, task, attempt, second, [fresh.id]).replay


def test_stale_input(live: Actors) -> None:
    admin, agent, human, ver = (live.client(n) for n in ("admin", "agent", "human", "verifier"))
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    receipt = verify(ver, live.world, cand)
    base = human.revision("src/input.txt")
    human.edit_artifact("src/input.txt", human.put_blob(b"22\n").digest, base)
    assert rejected(lambda: complete(agent, task, attempt, cand, [receipt.id])) == ("dependency_stale",)
    assert agent.task(task.id).task.status == "claimed"


def test_harmless_policy_publication(live: Actors) -> None:
    admin, agent, ver = live.client("admin"), live.client("agent"), live.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    receipt = verify(ver, live.world, cand)
    assert admin.publish_policy("stricter rules").version == 2
    done = complete(agent, task, attempt, cand, [receipt.id])
    assert agent.task(task.id).task.contract.policy_version == 1
    assert done.completion.revisions == {"src/answer.txt": 2}


def test_revocation_before_commit_rejects(live: Actors) -> None:
    admin, agent, ver = live.client("admin"), live.client("agent"), live.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    receipt = verify(ver, live.world, cand)
    admin.grant(live.world.agent.id, ["read"])
    admin.revoke_grant(live.world.grants["agent"])
    assert rejected(lambda: complete(agent, task, attempt, cand, [receipt.id])) == ("not_authorized",)


def test_revocation_after_commit_stands_and_replay_needs_read(live: Actors) -> None:
    admin, agent, ver = live.client("admin"), live.client("agent"), live.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    receipt = verify(ver, live.world, cand)
    first = complete(agent, task, attempt, cand, [receipt.id], request_id="once")
    for g in admin.grants():
        if g.principal_id == live.world.agent.id:
            admin.revoke_grant(g.id)
    assert admin.task(task.id).task.status == "completed"
    with pytest.raises(CompletionRejected) as info:  # a replay's receipt only for who may still read
        complete(agent, task, attempt, cand, [receipt.id], request_id="once")
    assert (info.value.reason, info.value.status) == ("task_not_found", 404)
    with pytest.raises(NotFound):
        agent.task(task.id)
    assert first.completion.task_id == task.id


def test_late_return_of_a_replaced_attempt(live: Actors) -> None:
    admin, a1, a2, ver = (live.client(n) for n in ("admin", "agent", "agent2", "verifier"))
    task = new_task(admin)
    old = a1.claim(task.id)
    late = submit(a1, old, {"src/answer.txt": b"41\n"})
    late_receipt = verify(ver, live.world, late)
    new = admin.reassign(task.id, live.world.agent2.id)
    cand = submit(a2, new, {"src/answer.txt": b"42\n"})
    receipt = verify(ver, live.world, cand)
    assert rejected(lambda: complete(a1, task, old, late, [late_receipt.id])) == ("attempt_superseded",)
    assert complete(a2, task, new, cand, [receipt.id]).completion.attempt_id == new.id
    assert rejected(lambda: complete(a1, task, old, late, [late_receipt.id], request_id="again")) == (
        "task_not_active",
        "attempt_superseded",
        "target_base_stale",
    )


def test_expired_lease_on_the_authority_clock(live: Actors) -> None:
    admin, agent, ver = live.client("admin"), live.client("agent"), live.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id, lease_seconds=30)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    receipt = verify(ver, live.world, cand)
    live.world.clock.advance(31)
    assert rejected(lambda: complete(agent, task, attempt, cand, [receipt.id])) == ("lease_expired",)


def test_idempotent_replay_status_and_header(live: Actors) -> None:
    admin, agent, ver = live.client("admin"), live.client("agent"), live.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    receipt = verify(ver, live.world, cand)
    body = {
        "request_id": "req-1",
        "attempt_id": attempt.id,
        "fence": attempt.fence,
        "contract_hash": task.contract_hash,
        "candidate_id": cand.id,
        "evidence": [receipt.id],
    }
    headers = {"Authorization": f"Bearer {live.tokens['agent']}"}
    with httpx.Client(base_url=live.url, headers=headers) as http:
        first = http.post(f"/v1/tasks/{task.id}/complete", json=body)
        again = http.post(f"/v1/tasks/{task.id}/complete", json=body)
        other = http.post(f"/v1/tasks/{task.id}/complete", json={**body, "evidence": []})
    assert (first.status_code, first.headers["Idempotent-Replay"]) == (201, "false")
    assert (again.status_code, again.headers["Idempotent-Replay"]) == (200, "true")
    assert again.json() == first.json()
    assert other.status_code == 409 and other.json()["reason"] == "request_id_conflict"


def test_event_stream_follows_the_ledger(live: Actors) -> None:
    admin = live.client("admin")
    start = admin.events(limit=1000)[-1].seq
    seen: list[s.EventOut] = []
    ready = threading.Event()

    def follow() -> None:
        with Client(live.url, live.tokens["agent"]) as c:
            for event in c.stream_events(after=start, timeout=5):
                seen.append(event)
                ready.set()
                if event.kind == "task.created":
                    return

    reader = threading.Thread(target=follow)
    reader.start()
    task = new_task(admin, "streamed")
    reader.join(10)
    assert [e.kind for e in seen][-1] == "task.created" and seen[-1].subject == task.id
    assert all(e.seq > start for e in seen)
    headers = {"Authorization": f"Bearer {live.tokens['agent']}", "Last-Event-ID": str(start)}
    with httpx.stream(
        "GET",
        f"{live.url}/v1/projects/{live.world.project_id}/events/stream",
        params={"timeout": 0.3},
        headers=headers,
    ) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    assert f"id: {seen[-1].seq}\nevent: task.created\n" in text
