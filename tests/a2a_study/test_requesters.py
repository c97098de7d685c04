"""The two requesters on the injected cases: the naive one finalizes early exactly where the
remote's terminal state precedes an artifact; the quiescence one never does, waits for late
artifacts, records lost ones as indeterminate and refuses tampered ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import studiolo.a2a_study.requesters as requesters_module
from studiolo.a2a_study import Decision, Kind, Params, RemoteTask, audit, draw_task, naive, quiescence
from studiolo.a2a_study.model import Delivery, Tamper
from studiolo.core import quiescence as core

PARAMS = Params()


def _tasks(
    params: Params, seed: int, want: int, keep: Callable[[RemoteTask], bool], limit: int = 20_000
) -> list[RemoteTask]:
    found: list[RemoteTask] = []
    for index in range(limit):
        task = draw_task(params, seed, index)
        if keep(task):
            found.append(task)
            if len(found) == want:
                return found
    raise AssertionError(f"only {len(found)} tasks of {want} in {limit} draws")


def _delivered_by(task: RemoteTask) -> int:
    times = [a.available_ms for a in task.artifacts]
    assert None not in times
    return max(t for t in times if t is not None)


def test_injected_races_are_premature_for_naive_and_waited_for_by_quiescence() -> None:
    late = _tasks(PARAMS, 7, 12, lambda t: t.late and not t.lost and t.tamper is Tamper.NONE)
    for task in late:
        behind = [a for a in task.artifacts if not a.retrievable(task.terminal_ms)]
        assert behind and all(a.delivery is Delivery.DETACHED for a in behind)
        assert audit(task, naive(task, PARAMS)).premature
        decision = quiescence(task, PARAMS)
        assert decision.kind is Kind.FINALIZED, (task.task_id, decision)
        assert decision.at_ms >= _delivered_by(task) > task.terminal_ms
        assert not audit(task, decision).premature
        assert dict(decision.payloads) == {a.artifact_id: a.genuine for a in task.artifacts}


def test_a_lost_artifact_is_indeterminate_after_the_bound_never_finalized() -> None:
    lost = _tasks(replace(PARAMS, lost_rate=0.5), 3, 5, lambda t: t.lost and t.tamper is Tamper.NONE)
    for task in lost:
        assert audit(task, naive(task, PARAMS)).premature
        decision = quiescence(task, PARAMS)
        assert decision.kind is Kind.INDETERMINATE and decision.code == "missing_artifacts"
        assert decision.at_ms - task.terminal_ms >= PARAMS.bound_s * 1000


def test_tasks_without_a_race_are_never_premature_for_either() -> None:
    calm = _tasks(PARAMS, 7, 300, lambda t: not t.late and t.tamper is Tamper.NONE)
    for task in calm:
        for requester in (naive, quiescence):
            decision = requester(task, PARAMS)
            assert decision.kind is Kind.FINALIZED
            assert not audit(task, decision).premature


@pytest.mark.parametrize(
    ("kind", "code"), [(Tamper.BYTES, "hash_mismatch"), (Tamper.UNPINNED_KEY, "bad_signature")]
)
def test_tampered_work_is_finalized_by_naive_and_refused_by_quiescence(kind: Tamper, code: str) -> None:
    params = replace(PARAMS, tamper_rate=1.0)
    tampered = _tasks(params, 5, 20, lambda t: t.tamper is kind and not t.lost)
    for task in tampered:
        assert audit(task, naive(task, params)).tampered
        decision = quiescence(task, params)
        assert (decision.kind, decision.code) == (Kind.INTEGRITY_FAILED, code)
        assert decision.payloads == {}


def test_the_quiescence_requester_runs_the_cores_function(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[core.Outcome] = []

    def spy(*args: object, **kwargs: object) -> core.Outcome:
        outcome = core.verify_and_quiesce(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(outcome)
        return outcome

    monkeypatch.setattr(requesters_module, "verify_and_quiesce", spy)
    task = draw_task(PARAMS, 0, 0)
    decision = quiescence(task, PARAMS)
    assert len(calls) == 1 and calls[0].kind is core.OutcomeKind.QUIESCED
    assert decision == Decision(Kind.FINALIZED, decision.at_ms, calls[0].payloads)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    index=st.integers(0, 10**6),
    queue_median_s=st.sampled_from([2.0, 30.0, 300.0, 3000.0]),
    lost_rate=st.sampled_from([0.0, 0.5, 1.0]),
    tamper_rate=st.sampled_from([0.0, 0.5]),
    threshold_mib=st.sampled_from([0, 1, 8]),
)
def test_quiescence_never_finalizes_early_or_tampered_work(
    seed: int, index: int, queue_median_s: float, lost_rate: float, tamper_rate: float, threshold_mib: int
) -> None:
    """Hostile remotes: very slow channels (beyond the bound), many lost and tampered artifacts,
    everything detached. The naive requester is premature exactly on the injected races."""
    params = replace(
        PARAMS,
        queue_median_s=queue_median_s,
        lost_rate=lost_rate,
        tamper_rate=tamper_rate,
        detached_threshold=threshold_mib << 20,
    )
    task = draw_task(params, seed, index)
    assert audit(task, naive(task, params)).premature == task.late
    decision = quiescence(task, params)
    verdict = audit(task, decision)
    assert not verdict.premature and not verdict.tampered
    if decision.kind is Kind.FINALIZED:
        assert decision.at_ms >= max(a.available_ms or 0 for a in task.artifacts)
    if task.lost:
        assert decision.kind is not Kind.FINALIZED


ALL_TERMINAL = ("canceled", "completed", "failed", "rejected")


@pytest.mark.parametrize("required", [("completed",), ALL_TERMINAL])
def test_a_manifest_published_after_the_terminal_state(required: tuple[str, ...]) -> None:
    """The a2a-sdk's `complete()` then `add_artifact(...)` ordering: the manifest lags the
    state. A policy that requires a manifest only for `completed` finalizes a failed or
    canceled task before its artifacts; requiring one for every terminal state does not."""
    params = replace(PARAMS, manifest_lag_rate=1.0, tamper_rate=0.0, manifest_required=required)
    early: set[str] = set()
    for index in range(1500):
        task = draw_task(params, 9, index)
        decision = quiescence(task, params)
        if audit(task, decision).premature:
            early.add(task.terminal.value)
    if required == ALL_TERMINAL:
        assert early == set()
    else:
        assert early == {"failed", "canceled"}
