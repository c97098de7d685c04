"""The scale checker must be able to fail: each invariant it claims is broken once here."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from studiolo.settings import Settings
from tests.scale.checker import check_run, load_rows
from tests.world import World, build_world


@pytest.fixture
def done(tmp_path: Path) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    w: World = build_world(tmp_path)
    task = w.new_task()
    att = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    out = w.complete(task, att, cand, [w.receipt(cand).id], request_id="req-1")
    again = w.complete(task, att, cand, [w.receipt(cand).id], request_id="req-1")
    answers = [
        {"rid": "req-1", "outcome": o, "completion": c.completion.id, "signature": c.completion.signature}
        for o, c in (("accepted", out), ("replay", again))
    ]
    rows = load_rows(Settings.sqlite_url(tmp_path / "ledger.db"))
    w.coord.store.dispose()
    return rows, answers


def test_a_clean_run_passes(done: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    rows, answers = done
    found = check_run(rows, answers)
    assert found.problems == [] and found.accepted == 1


def _problems(rows: dict[str, Any], answers: list[dict[str, Any]]) -> str:
    return " | ".join(check_run(rows, answers).problems)


def test_each_broken_invariant_is_reported(done: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    rows, answers = done
    accepted = next(e for e in rows["events"] if e["kind"] == "completion.accepted")

    edited = copy.deepcopy(rows)  # an event altered after the fact
    next(e for e in edited["events"] if e["seq"] == accepted["seq"])["data"]["fence"] = 7
    assert "audit chain broken" in _problems(edited, answers)

    twice = copy.deepcopy(rows)  # a second completion of the same task
    twice["events"].append({**copy.deepcopy(accepted), "seq": len(rows["events"]) + 1})
    assert "completed 2 times" in _problems(twice, answers)

    other = [*answers, {**answers[0], "outcome": "replay", "signature": "forged"}]
    assert "different answers" in _problems(rows, other)

    partial = copy.deepcopy(rows)  # a completion row whose task never became completed
    next(t for t in partial["tasks"] if t["id"] == accepted["subject"])["status"] = "claimed"
    assert "without a completed task" in _problems(partial, answers)

    lost = copy.deepcopy(rows)  # published revisions that no completion row explains
    lost["completions"] = []
    assert "not recorded" in _problems(lost, answers)

    fences = copy.deepcopy(rows)
    claimed = next(e for e in fences["events"] if e["kind"] == "attempt.claimed")
    fences["events"].append({**claimed, "seq": 10_000, "data": {**claimed["data"], "fence": 1}})
    assert "does not exceed" in _problems(fences, answers)

    pinned = copy.deepcopy(rows)
    row = next(e for e in pinned["events"] if e["seq"] == accepted["seq"])
    row["data"]["contract_hash"] = "sha256:" + "1" * 64
    assert "not pinned" in _problems(pinned, answers)
    moved = copy.deepcopy(rows)  # a lease that moved after the completion relied on it
    next(a for a in moved["attempts"] if a["id"] == accepted["data"]["attempt"])["lease_deadline"] += 5
    assert "differs from the attempt's row" in _problems(moved, answers)

    lapsed = copy.deepcopy(rows)  # a completion that relied on a lease already over
    row = next(e for e in lapsed["events"] if e["seq"] == accepted["seq"])
    row["data"]["lease_deadline"] = row["at"] - 1
    assert "lease was not live" in _problems(lapsed, answers)
    assert json.dumps(rows, default=str)  # the fixture stayed intact
