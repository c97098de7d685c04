"""The completion's read ahead of the gate (`CompletionOps._ahead`, PostgreSQL) only chooses
what to read inside it: whatever it says, the decision is the one made from the reads
inside the gate. Here it is handed stale or wrong task and candidate rows on purpose."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from studiolo._exceptions import CompletionRejected
from studiolo.core.model import Candidate, Task
from studiolo.service import Coordinator, make_request
from studiolo.service.completion import CompletionOutcome
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.store.work import task_and_candidate
from tests.scale.cluster import ready_completions, seed_project


@pytest.fixture
def ready(store_url: str) -> Iterator[tuple[Coordinator, list[dict[str, Any]]]]:
    items = ready_completions(seed_project(store_url, agents=2, tasks=6, hot=0))
    coord = Coordinator(Store(store_url), Settings(database_url=store_url))
    yield coord, items
    coord.store.dispose()


def _rows(coord: Coordinator, task_id: str, candidate_id: str) -> tuple[Task, Candidate | None]:
    found = coord.store.glance(lambda bare: task_and_candidate(bare, task_id, candidate_id))
    assert found is not None
    return found


def _decide(coord: Coordinator, item: dict[str, Any], ahead: tuple[Task, Candidate | None] | None) -> Any:
    who = coord.authenticate(item["token"])
    q = make_request(task_id=item["task"], **item["request"])
    return coord.write_about("task", q.task_id, lambda tx: coord.completion.complete_in(tx, who, q, ahead))


def test_the_read_ahead_names_the_task_and_its_candidate(
    ready: tuple[Coordinator, list[dict[str, Any]]],
) -> None:
    coord, items = ready
    item = items[0]
    task, cand = _rows(coord, item["task"], item["request"]["candidate_id"])
    assert task.id == item["task"] and cand is not None and cand.id == item["request"]["candidate_id"]
    assert _rows(coord, item["task"], items[1]["request"]["candidate_id"])[1] is not None  # same project
    assert _rows(coord, item["task"], "cnd_nosuchcandidate")[1] is None


def test_a_stale_or_wrong_read_ahead_changes_nothing(ready: tuple[Coordinator, list[dict[str, Any]]]) -> None:
    coord, items = ready
    task, cand = _rows(coord, items[0]["task"], items[0]["request"]["candidate_id"])
    other_task, other_cand = _rows(coord, items[1]["task"], items[1]["request"]["candidate_id"])
    wrong: list[tuple[Task, Candidate | None] | None] = [
        None,  # SQLite's way: no read ahead
        (dataclasses.replace(task, contract_hash="sha256:" + "0" * 64), cand),  # the contract moved
        (task, None),  # the candidate was not there yet
        (task, other_cand),  # another candidate
        (other_task, other_cand),  # another task altogether
        (dataclasses.replace(task, project_id="prj_elsewhere00"), cand),
    ]
    for item, ahead in zip(items, wrong, strict=False):
        outcome = _decide(coord, item, ahead)
        assert isinstance(outcome, CompletionOutcome) and not outcome.replay, ahead
        assert outcome.completion.task_id == item["task"]
        assert outcome.completion.candidate_id == item["request"]["candidate_id"]
        assert coord.store.read(lambda tx, t=item["task"]: tx.work.task(t)).status.value == "completed"


def test_a_refusal_is_the_same_with_and_without_the_read_ahead(
    ready: tuple[Coordinator, list[dict[str, Any]]],
) -> None:
    coord, items = ready
    item = dict(items[0])
    item["request"] = dict(item["request"], candidate_id=items[1]["request"]["candidate_id"])  # not its own
    refused = _decide(coord, item, None)
    ahead = _rows(coord, item["task"], item["request"]["candidate_id"])
    also = _decide(coord, item, ahead)
    failed = [r.value for r in refused.verdict.failed]
    assert failed and failed == [r.value for r in also.verdict.failed]
    with pytest.raises(CompletionRejected) as through_the_door:  # the door reads ahead on PostgreSQL
        coord.complete(
            coord.authenticate(item["token"]), make_request(task_id=item["task"], **item["request"])
        )
    assert list(through_the_door.value.failed) == failed
