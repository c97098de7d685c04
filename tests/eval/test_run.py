"""`studiolo eval` end to end on a small repository of our own: the real door, the real
verifier in its sandbox, the repository's suite; the full contract against report-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studiolo.eval.cell import CellSpec
from studiolo.eval.oracle import label_decisions
from studiolo.eval.results import render_results, replay_trace, strip_timing, write_traces
from studiolo.eval.run import EvalConfig, EvalResult, run_eval
from studiolo.eval.trace import dump_lines, read_trace
from studiolo.eval.workload import load_workload


@pytest.fixture(scope="module")
def result(small_repo: tuple[Path, str]) -> EvalResult:
    repo, until = small_repo
    config = EvalConfig(
        str(repo),
        until,
        3,
        seeds=(1,),
        mechanisms=("full-atomic", "report-only"),
        read_policies=("written", "package"),
        edits=1,
    )
    return run_eval(config)


def test_the_workload_is_the_history(small_repo: tuple[Path, str]) -> None:
    repo, until = small_repo
    w = load_workload(str(repo), until, 3, edits=2)
    assert [t.title for t in w.tasks] == ["add mul", "add sub", "square uses mul"]
    assert w.tasks[0].paths == ("pkg/mul.py", "tests/test_mul.py")
    assert w.tasks[0].before["pkg/mul.py"] is None  # a new file
    assert [(e.path, e.commit[:7]) for e in w.human_edits] == [
        ("pkg/calc.py", e.commit[:7]) for e in w.human_edits
    ]
    assert len(w.human_edits) == 1 and "pkg/calc.py" in w.tasks[2].paths
    assert set(w.base_files) == {"pkg/__init__.py", "pkg/calc.py", "tests/__init__.py", "tests/test_calc.py"}


def test_the_full_contract_accepts_nothing_ineligible_and_completes_under_quiescence(
    result: EvalResult,
) -> None:
    full = [c for c in result.cells if c["cell"]["mechanism"] == "full-atomic"]
    assert len(full) == 4  # two read policies, each also quiescent
    for cell in full:
        counts = cell["counts"]
        assert counts["unsafe_accept"] == 0, cell["key"]
        assert counts["mirror_matches_ledger"], cell["key"]
    for cell in (c for c in full if c["cell"]["quiescent"]):
        assert cell["counts"]["task_success"] == cell["counts"]["tasks"] == 3, cell["key"]
        assert cell["counts"]["final_suite_passes"]
    doc = json.loads(render_results(result))
    assert doc["falsification"]["rejected"] is False


def test_every_full_contract_decision_equals_the_oracle(result: EvalResult) -> None:
    for key, records in result.traces.items():
        if not key.startswith("full-atomic"):
            continue
        labels = label_decisions(records)
        decisions = [r for r in records if r["kind"] == "decision"]
        assert decisions
        assert all(labels[d["seq"]].eligible == d["accepted"] for d in decisions), key


def test_report_only_accepts_what_the_oracle_calls_ineligible(result: EvalResult) -> None:
    unsafe = sum(
        c["counts"]["unsafe_accept"] for c in result.cells if c["cell"]["mechanism"] == "report-only"
    )
    assert unsafe > 0
    assert "report-only" in result.counterexamples()


def test_the_results_file_has_no_wall_time_outside_timing(result: EvalResult) -> None:
    doc = json.loads(render_results(result))
    text = json.dumps(strip_timing(doc))
    assert "_ms" not in text and "wall" not in text
    assert doc["pins"]["workload"]["tasks"] == [t.commit for t in result.workload.tasks]


def test_a_trace_replays_and_a_changed_decision_fails_the_replay(
    result: EvalResult, small_repo: tuple[Path, str], tmp_path: Path
) -> None:
    repo, _ = small_repo
    [path] = write_traces(result, tmp_path)
    assert path.name == "report-only.jsonl"
    ok = replay_trace(path, str(repo))
    assert ok.ok, ok.message
    records = read_trace(path)
    decision = next(r for r in records if r["kind"] == "decision" and r["accepted"])
    decision["accepted"] = False
    decision["failed"] = ["lease_expired"]
    path.write_text(dump_lines(records))
    changed = replay_trace(path, str(repo))
    assert not changed.ok
    assert "decision" in changed.message


def test_a_cell_alone_gives_the_trace_it_gives_among_others(
    result: EvalResult,
) -> None:
    spec = CellSpec("full-atomic", "package", 1)
    alone = run_eval(result.config, only=[spec]).traces[spec.key]
    among = result.traces[spec.key]
    assert [strip_timing(r) for r in alone] == [strip_timing(r) for r in among]


def test_the_command_line_writes_results_traces_and_replays(
    small_repo: tuple[Path, str], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from studiolo.faces.cli import app

    repo, until = small_repo
    out = tmp_path / "r.json"
    args = ["eval", "--repo", str(repo), "--until", until, "--tasks", "3", "--edits", "1"]
    args += ["--mechanism", "report-only", "--read-policy", "written", "--out", str(out)]
    ran = CliRunner().invoke(app, args)
    assert ran.exit_code == 0, ran.output
    assert "| report-only | written |" in ran.output
    assert "accepts after a prior revocation" in ran.output
    doc = json.loads(out.read_text())
    assert doc["config"]["repository"] == repo.name
    trace = tmp_path / "traces" / "report-only.jsonl"
    assert trace.exists()
    replayed = CliRunner().invoke(app, ["eval", "--replay", str(trace), "--repo", str(repo)])
    assert replayed.exit_code == 0, replayed.output
    assert replayed.output.splitlines()[-1].startswith("OK ")
