"""`studiolo a2a-study` through the real (lazy) CLI: tables then a JSON last line, `--json`
alone, `--out` then `--check`, bad input, and exit 1 when the shape does not hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from studiolo.a2a_study import naive, run_study
from studiolo.faces.cli import app

runner = CliRunner()


def test_json_prints_one_line_the_summary() -> None:
    result = runner.invoke(app, ["a2a-study", "--tasks", "1200", "--seed", "4", "--json"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1
    doc = json.loads(lines[0])
    assert (doc["seed"], doc["tasks"], doc["shape"]["ok"]) == (4, 1200, True)
    assert set(doc["requesters"]) == {"naive", "quiescence"}


def test_tables_then_a_json_last_line(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["a2a-study", "--tasks", "1200", "--out", str(out)], terminal_width=100)
    assert result.exit_code == 0, result.output
    assert "premature finalizations" in result.output and "indeterminate" in result.output
    last = json.loads(result.output.splitlines()[-1])
    assert last == {k: v for k, v in json.loads(out.read_bytes()).items() if k not in ("schema", "params")}
    checked = runner.invoke(app, ["a2a-study", "--check", str(out)])
    assert checked.exit_code == 0 and checked.output.startswith("OK ")


def test_a_tampered_results_file_fails_the_check(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert runner.invoke(app, ["a2a-study", "--tasks", "300", "--out", str(out), "--json"]).exit_code == 0
    out.write_text(out.read_text().replace('"tasks": 300', '"tasks": 301'))
    result = runner.invoke(app, ["a2a-study", "--check", str(out)])
    assert result.exit_code == 1 and "FAILED" in result.output


@pytest.mark.parametrize("args", [["--tasks", "0"], ["--seed", "-1"], ["--tasks", "many"]])
def test_bad_options_are_usage_errors(args: list[str]) -> None:
    assert runner.invoke(app, ["a2a-study", *args]).exit_code == 2


def test_exit_1_when_the_quiescence_requester_finalizes_early(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(seed: int, tasks: int) -> object:
        return run_study(seed, tasks, requesters={"naive": naive, "quiescence": naive})

    monkeypatch.setattr("studiolo.faces.cli_a2a_study.run_study", broken)
    result = runner.invoke(app, ["a2a-study", "--tasks", "1500", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output.splitlines()[-1])["shape"]["ok"] is False
