from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from studiolo.faces.cli_study import register
from studiolo.study import StudyResult, render_results, shipped_results


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def main() -> None:
        """Studiolo (test app)."""

    return app


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch, study_result: StudyResult) -> StudyResult:
    """Serve the session's model run instead of recomputing it."""
    monkeypatch.setattr("studiolo.faces.cli_study.run_model", lambda progress=None: study_result)
    monkeypatch.setattr("studiolo.study.check.run_model", lambda progress=None: study_result)
    return study_result


def test_check_accepts_the_shipped_file(app: typer.Typer, canned: StudyResult) -> None:
    """The session's fresh model run, compared byte for byte through the CLI."""
    result = CliRunner().invoke(app, ["study", "--check", str(shipped_results())])
    assert result.exit_code == 0, result.output
    assert "OK " in result.output


def test_run_writes_results_and_prints_the_comparison(
    app: typer.Typer, canned: StudyResult, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    result = CliRunner().invoke(app, ["study", "--out", str(out)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == render_results(canned)
    for text in ("split-preflight", "718", "1,914", "report", "7/7"):
        assert text in result.output


def test_check_fails_on_a_changed_byte(app: typer.Typer, canned: StudyResult, tmp_path: Path) -> None:
    copy = tmp_path / "results.json"
    copy.write_bytes(shipped_results().read_bytes().replace(b'"mode": "model"', b'"mode": "mudel"'))
    result = CliRunner().invoke(app, ["study", "--check", str(copy)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "FAILED" in result.output and "line" in result.output


def test_check_fails_on_a_missing_file(app: typer.Typer, canned: StudyResult, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["study", "--check", str(tmp_path / "nope.json")])
    assert result.exit_code == 1
    assert "cannot read" in result.output
