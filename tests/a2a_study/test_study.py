"""The study as a whole: deterministic for a seed, the expected shape at a small size, a shape
check that does catch a requester trusting the terminal state, and the results file check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studiolo.a2a_study import (
    Params,
    StudyResult,
    check_results,
    draw_task,
    naive,
    render_results,
    run_study,
    shape,
    shipped_results,
    summary,
)

SMALL = 3000


@pytest.fixture(scope="module")
def small() -> StudyResult:
    return run_study(0, SMALL)


def test_the_same_seed_gives_the_same_bytes_and_another_seed_does_not() -> None:
    first = render_results(run_study(11, 800))
    assert render_results(run_study(11, 800)) == first
    assert render_results(run_study(12, 800)) != first


def test_a_task_is_the_same_whatever_else_is_drawn() -> None:
    params = Params()
    later = [draw_task(params, 3, i) for i in range(40, 60)]
    assert [draw_task(params, 3, i) for i in reversed(range(40, 60))][::-1] == later
    assert draw_task(params, 3, 41) != draw_task(params, 4, 41)


def test_the_expected_shape_at_a_small_size(small: StudyResult) -> None:
    world, doc = small.world, summary(small)
    naive_row, quiet = doc["requesters"]["naive"], doc["requesters"]["quiescence"]
    assert doc["shape"]["ok"]
    assert 0.2 <= 100 * world.late_tasks / world.tasks <= 0.8
    assert world.late_detached_tasks == world.late_tasks  # every race is on a detached artifact
    assert naive_row["premature"] == world.late_tasks and naive_row["finalized"] == SMALL
    assert naive_row["tampered_finalized"] == sum(world.tampered.values()) > 0
    assert quiet["premature"] == quiet["tampered_finalized"] == 0
    assert quiet["integrity_failures_caught"]["total"] == sum(world.tampered.values())
    lost = world.lost_tasks
    assert quiet["indeterminate"] == {"total": lost, "by": {"missing_artifacts": lost}} and lost > 0
    for kind in ("detached", "other"):
        assert naive_row["added_latency"][kind]["p99_s"] == 0.0
    detached, other = quiet["added_latency"]["detached"], quiet["added_latency"]["other"]
    confirm = Params().confirm_interval_s  # the least time between the two reads that agree
    assert confirm <= other["median_s"] < confirm + 0.5  # the interval covers small fetches
    assert detached["median_s"] >= other["median_s"]  # > 8 MiB fetches, and late artifacts
    assert detached["p99_s"] > 10 * other["p99_s"]


def test_the_shape_check_catches_a_requester_that_trusts_the_terminal_state() -> None:
    broken = run_study(0, SMALL, requesters={"naive": naive, "quiescence": naive})
    assert broken.world.late_tasks > 0 and sum(broken.world.tampered.values()) > 0
    assert shape(broken) == {
        "naive_premature_on_every_race": True,
        "quiescence_never_premature": False,
        "quiescence_never_finalizes_tampered": False,
        "ok": False,
    }


def test_check_accepts_a_fresh_file_and_names_the_line_of_an_edit(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(render_results(run_study(2, 400)))
    assert check_results(path).ok
    text = path.read_text().splitlines()
    line = next(n for n, row in enumerate(text, 1) if '"premature":' in row)
    text[line - 1] = text[line - 1].replace(": ", ": 1", 1)
    path.write_text("\n".join(text) + "\n")
    outcome = check_results(path)
    assert not outcome.ok and f"at line {line};" in outcome.message


@pytest.mark.parametrize(
    "content",
    [b"not json", b"[]", b'{"seed": 0}', b'{"seed": -1, "tasks": 10}', b'{"seed": 0, "tasks": 1e12}'],
)
def test_check_refuses_what_is_not_a_results_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(content)
    outcome = check_results(path)
    assert not outcome.ok and outcome.message.startswith("FAILED")


@pytest.mark.slow
def test_the_shipped_results_are_a_fresh_run() -> None:
    """The full default run (10,000 delegations), compared byte for byte."""
    outcome = check_results(shipped_results())
    assert outcome.ok, outcome.message
    shipped = json.loads(shipped_results().read_bytes())
    assert shipped["tasks"] >= 10_000 and shipped["shape"]["ok"]
