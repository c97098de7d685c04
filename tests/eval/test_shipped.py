"""The shipped results and counterexample traces (studiolo/eval/results.json, traces/), and
docs/evaluation.md kept true to them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from studiolo.eval.oracle import label_decisions
from studiolo.eval.results import check_results, render_table, replay_trace
from studiolo.eval.run import shipped_results, source_digest
from studiolo.eval.trace import read_trace
from tests.eval.conftest import TOMLI

DOC = Path(__file__).resolve().parents[2] / "docs" / "evaluation.md"
TRACES = shipped_results().parent / "traces"


@pytest.fixture(scope="module")
def shipped() -> dict:  # type: ignore[type-arg]
    return json.loads(shipped_results().read_text())


def test_the_docs_show_the_shipped_table(shipped: dict) -> None:  # type: ignore[type-arg]
    assert render_table(shipped) in DOC.read_text(), "paste render_table(results) into docs/evaluation.md"


def test_the_shipped_file_was_made_by_this_code(shipped: dict) -> None:  # type: ignore[type-arg]
    assert shipped["pins"]["eval_source_digest"] == source_digest(), (
        "regenerate: studiolo eval --until 1da01ef --tasks 6 --seeds 1,2 "
        "--out studiolo/eval/results.json --traces studiolo/eval/traces"
    )


def test_the_full_contract_is_not_falsified(shipped: dict) -> None:  # type: ignore[type-arg]
    verdict = shipped["falsification"]
    assert verdict["rejected"] is False
    assert verdict["full_contract_unsafe_accepts"] == 0
    full = [c for c in shipped["cells"] if c["cell"]["mechanism"] == "full-atomic"]
    assert full and all(c["counts"]["eligible_reject"] == 0 for c in full)


def test_each_unsafe_mechanism_ships_a_counterexample_the_oracle_confirms(shipped: dict) -> None:  # type: ignore[type-arg]
    unsafe = {c["cell"]["mechanism"] for c in shipped["cells"] if c["counts"]["unsafe_accept"]}
    assert unsafe and "full-atomic" not in unsafe
    assert set(shipped["counterexamples"]) == unsafe
    for mechanism in unsafe:
        records = read_trace(TRACES / f"{mechanism}.jsonl")
        assert records[0]["cell"]["mechanism"] == mechanism
        labels = label_decisions(records)
        bad = [
            r for r in records if r["kind"] == "decision" and r["accepted"] and not labels[r["seq"]].eligible
        ]
        assert bad, mechanism


@pytest.mark.slow
@pytest.mark.skipif(not TOMLI.exists(), reason=f"the evaluation's repository is absent ({TOMLI})")
def test_a_shipped_trace_replays_decision_for_decision() -> None:
    smallest = min(TRACES.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    outcome = replay_trace(smallest, str(TOMLI))
    assert outcome.ok, outcome.message


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("STUDIOLO_EVAL_CHECK") != "1", reason="the whole run: STUDIOLO_EVAL_CHECK=1"
)
@pytest.mark.skipif(not TOMLI.exists(), reason=f"the evaluation's repository is absent ({TOMLI})")
def test_check_recomputes_the_shipped_file() -> None:
    outcome = check_results(shipped_results(), str(TOMLI))
    assert outcome.ok, outcome.message
