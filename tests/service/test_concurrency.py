"""Real threads race completions against revocations, reassignments and edits on one SQLite
file. Afterwards the independent audit checker finds no accepted completion that violated
the contract at its commit point, and at most one completion per task."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from studiolo import StudioloError
from studiolo.core.model import Principal
from tests.auditcheck import check, load_deadlines, load_events
from tests.world import World, build_world

WORKERS = 4
ROUNDS = 25


def _worker(
    w: World, me: Principal, tasks: list[str], seed: int, stop: threading.Event, stats: Counter[str]
) -> None:
    rng = random.Random(seed)
    for _ in range(ROUNDS):
        if stop.is_set():
            return
        tid = rng.choice(tasks)
        try:
            att = w.coord.claim(me, tid, rng.choice([1.0, 5.0]))
            if rng.random() < 0.5:  # an extension is not an event: the completion records it
                att = w.coord.heartbeat(me, att.id, rng.choice([1.0, 5.0]))
            task = w.coord.task_view(me, tid).task
            target = f"src/t{tasks.index(tid)}.txt"
            dep = w.coord.read_revision(me, w.project_id, "src/input.txt")
            cand = w.candidate(
                att, {target: f"{me.name} {seed}".encode()}, deps={"src/input.txt": dep}, who=me
            )
            rc = w.receipt(cand)
            w.complete(task, att, cand, [rc.id], who=me, request_id=f"{me.id}-{rng.random()}")
            stats["accepted"] += 1
        except StudioloError as err:
            stats[err.reason] += 1


def _chaos(w: World, tasks: list[str], seed: int, stop: threading.Event) -> None:
    rng = random.Random(seed)
    agents = [w.agent, w.agent2]
    while not stop.is_set():
        move = rng.choice(["revoke", "reassign", "edit", "edit-target"])
        try:
            if move == "revoke":
                key = rng.choice(["agent", "agent2"])
                who = w.agent if key == "agent" else w.agent2
                w.coord.revoke_grant(w.admin, w.grants[key])
                w.grants[key] = w.coord.grant(
                    w.admin, w.project_id, who.id, ["write", "claim", "complete"], ["src/**"]
                ).id
            elif move == "reassign":
                w.coord.reassign(w.admin, rng.choice(tasks), rng.choice(agents).id, 5.0)
            elif move == "edit":
                w.edit("src/input.txt", str(rng.random()).encode())
            else:
                w.edit(f"src/t{rng.randrange(len(tasks))}.txt", b"human edit")
        except StudioloError:
            pass
        time.sleep(0.002)


def test_races_leave_no_unsafe_completion(tmp_path: Path) -> None:
    w = build_world(tmp_path, clock=time.time)
    tasks = [w.new_task(f"race {i}", scope=["src/**"]).id for i in range(12)]
    stop, stats = threading.Event(), Counter[str]()
    agents = [w.agent, w.agent2]
    threads = [
        threading.Thread(target=_worker, args=(w, agents[i % 2], tasks, i, stop, stats))
        for i in range(WORKERS)
    ]
    chaos = threading.Thread(target=_chaos, args=(w, tasks, 99, stop))
    chaos.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    stop.set()
    chaos.join(timeout=60)

    events = load_events(w.coord.store.url)
    assert check(events, load_deadlines(w.coord.store.url)) == []
    per_task = Counter(e["subject"] for e in events if e["kind"] == "completion.accepted")
    assert per_task and max(per_task.values()) == 1
    assert stats["accepted"] == sum(per_task.values())
    assert sum(stats.values()) > stats["accepted"] > 0, stats  # real contention happened
    assert w.coord.verify_audit().ok


def test_the_checker_catches_a_forged_completion(tmp_path: Path) -> None:
    """The checker must be able to fail: a completion event after revocation is flagged."""
    w = build_world(tmp_path, clock=time.time)
    task = w.new_task("x", scope=["src/**"])
    att = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(att, {"src/x.txt": b"1"}, deps={"src/input.txt": 1})
    rc = w.receipt(cand)
    w.complete(task, att, cand, [rc.id])
    events = load_events(w.coord.store.url)
    assert check(events) == []
    done = next(i for i, e in enumerate(events) if e["kind"] == "completion.accepted")
    revoke = {"kind": "grant.revoked", "subject": w.grants["agent"], "data": {}, "project_id": w.project_id}
    tampered = [*events[:done], revoke, events[done]]
    assert any("not authorized" in p for p in check(tampered))


def test_the_checker_catches_a_second_completion(tmp_path: Path) -> None:
    w = build_world(tmp_path, clock=time.time)
    task = w.new_task("x", scope=["src/**"])
    att = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(att, {"src/x.txt": b"1"}, deps={"src/input.txt": 1})
    w.complete(task, att, cand, [w.receipt(cand).id])
    events = load_events(w.coord.store.url)
    done = next(e for e in events if e["kind"] == "completion.accepted")
    problems = check([*events, done])
    assert any("not active" in p for p in problems)
    assert any("request id accepted twice" in p for p in problems)


def test_the_checker_holds_the_recorded_lease_deadline(tmp_path: Path) -> None:
    """A heartbeat leaves no event; the completion's recorded deadline is checked instead:
    against the commit time, against what was ever granted, and against the attempt's row."""
    w = build_world(tmp_path, clock=time.time)
    task = w.new_task("x", scope=["src/**"])
    att = w.coord.claim(w.agent, task.id, 60)
    att = w.coord.heartbeat(w.agent, att.id, 120)
    cand = w.candidate(att, {"src/x.txt": b"1"}, deps={"src/input.txt": 1})
    w.complete(task, att, cand, [w.receipt(cand).id])
    events, deadlines = load_events(w.coord.store.url), load_deadlines(w.coord.store.url)
    assert not any(e["kind"] == "attempt.heartbeat" for e in events)
    assert check(events, deadlines) == []
    done = next(e for e in events if e["kind"] == "completion.accepted")
    assert done["data"]["lease_deadline"] == att.lease_deadline == deadlines[att.id]

    def forged(deadline: float) -> list[dict[str, Any]]:
        return [{**e, "data": {**e["data"], "lease_deadline": deadline}} if e is done else e for e in events]

    assert any("lease was not live" in p for p in check(forged(done["at"] - 1)))
    assert any("never granted" in p for p in check(forged(done["at"] + 0.5)))
    assert any("differs from the attempt's row" in p for p in check(events, {**deadlines, att.id: 1.0}))
    bare = {k: v for k, v in done["data"].items() if k != "lease_deadline"}
    unrecorded = [{**e, "data": bare} if e is done else e for e in events]
    assert any("not recorded" in p for p in check(unrecorded))
