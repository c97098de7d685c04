"""engine-results.json: the shipped file, its rendering and check, the docs and the CLI.

Nothing here runs the engine on every schedule (``test_engine_full.py`` does): the shipped
file is checked for what it claims and against the docs, and the rendering, the check and
the CLI are exercised with a canned result built from the model run.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from studiolo.faces.cli_study import register
from studiolo.study import StudyResult
from studiolo.study.engine import (
    DOORS,
    EXPLANATIONS,
    EngineResult,
    RowComparison,
    check_engine_results,
    engine_source_digest,
    render_engine_results,
    shipped_engine_results,
)
from studiolo.study.engine.run import partition
from studiolo.study.schedules import all_schedules

DOC = Path(__file__).resolve().parents[2] / "docs" / "study.md"
SHIPPED = json.loads(shipped_engine_results().read_bytes())


def _number(cell: str) -> int:
    return int(cell.replace(",", "").split(" ")[0])


def test_the_shipped_file_is_current_and_meets_the_spec() -> None:
    assert SHIPPED["source_digest"] == engine_source_digest(), (
        "regenerate: studiolo study --engine --out studiolo/study/engine-results.json"
    )
    assert SHIPPED["mode"] == "engine" and SHIPPED["ok"] is True
    assert SHIPPED["full_atomic"] == {
        "expected": [470, 0, 6224, 0],
        "exact": True,
        "oracle_agreement": 6694,
        "oracle_agrees_on_every_schedule": True,
    }
    assert SHIPPED["executions"] == {"primary": 87022, "negative_controls": 91, "replay_checks": 31380}
    assert SHIPPED["model_comparison"]["all_explained"] is True
    assert all(m["row_sums_to_schedules"] and m["replays"]["ok"] for m in SHIPPED["mechanisms"])
    assert all(c["matches"] for c in SHIPPED["negative_controls"])


def test_the_shipped_model_rows_are_the_model_run(study_result: StudyResult) -> None:
    for row in SHIPPED["model_comparison"]["rows"]:
        model = study_result.row(row["mechanism"])
        assert row["model"] == [
            model.safe_accept,
            model.unsafe_accept,
            model.safe_reject,
            model.eligible_reject,
        ]


def test_only_explained_mechanisms_differ_from_the_model() -> None:
    differing = {r["mechanism"] for r in SHIPPED["model_comparison"]["rows"] if not r["same_decisions"]}
    assert differing == set(EXPLANATIONS) == {"no-attempt-binding", "no-artifact-binding", "report-only"}


def _engine_table() -> list[list[str]]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| mechanism (engine) |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_docs_table_is_the_shipped_file() -> None:
    rows = {r["mechanism"]: r for r in SHIPPED["model_comparison"]["rows"]}
    table = _engine_table()
    assert [cells[0] for cells in table] == [d.mechanism_id for d in DOORS]
    for cells in table:
        row = rows[cells[0]]
        assert [_number(c) for c in cells[1:5]] == row["engine"], cells[0]
        model = row["model"][3] if cells[0] == "latest-policy" else row["model"][1]
        assert _number(cells[5]) == model, cells[0]
        assert cells[6].startswith("yes" if row["same_decisions"] else "no"), cells[0]


def test_the_docs_quote_every_explanation_with_its_count() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Engine mode") :]
    for row in SHIPPED["model_comparison"]["rows"]:
        for explanation in row["explanations"]:
            assert f"**{explanation['name'][0].upper()}{explanation['name'][1:]}**" in section
            assert f"{explanation['schedules']:,}" in section
    transactions = SHIPPED["transactions"]
    for key in ("commit", "preflight", "replay"):
        assert f"{transactions[key]:,}" in section
    for reason, count in SHIPPED["rejection_reasons"]["full-atomic"].items():
        label = reason.split(" (")[0]  # "no candidate (attempt_not_active)" is "no candidate"
        assert re.search(rf"{re.escape(label)}`? {count:,}", section), reason


def test_chunks_cover_every_schedule_once_and_own_their_commit_points() -> None:
    schedules = all_schedules()
    chunks = partition(schedules)
    flat = [i for chunk in chunks for i in chunk]
    assert sorted(flat) == list(range(len(schedules)))
    owners: dict[tuple[object, ...], int] = {}
    for n, chunk in enumerate(chunks):
        for i in chunk:
            assert owners.setdefault(schedules[i][:5], n) == n, "a 5-event prefix in two chunks"


@pytest.fixture
def canned(study_result: StudyResult) -> EngineResult:
    """The model run dressed as an engine result: for rendering, not for its numbers."""
    study = dataclasses.replace(study_result, mode="engine", source_digest=engine_source_digest())
    comparisons = tuple(
        RowComparison(r.row.mechanism, r.row, r.row, 0, 0, (), True) for r in study.mechanisms
    )
    return EngineResult(
        study, comparisons, 6694, (("full-atomic", (("lease_expired", 1),)),), (("commit", 1),)
    )


def test_rendering_is_deterministic_and_canonical(canned: EngineResult) -> None:
    data = render_engine_results(canned)
    assert data == render_engine_results(canned)
    document = json.loads(data)
    again = json.dumps(document, sort_keys=True, indent=2, separators=(",", ": ")) + "\n"
    assert again.encode() == data
    assert set(document) == set(SHIPPED)
    assert "/work" not in data.decode("ascii") and not re.search(rb"\d{4}-\d{2}-\d{2}", data)


def test_check_compares_bytes(canned: EngineResult, tmp_path: Path) -> None:
    path = tmp_path / "engine-results.json"
    path.write_bytes(render_engine_results(canned))
    assert check_engine_results(path, result=canned).ok
    path.write_bytes(path.read_bytes().replace(b'"commit": 1', b'"commit": 2'))
    outcome = check_engine_results(path, result=canned)
    assert not outcome.ok and outcome.difference is not None and outcome.source_digest_differs is False
    assert "FAILED" in outcome.message
    assert "cannot read" in check_engine_results(tmp_path / "nope.json", result=canned).message


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch, canned: EngineResult) -> typer.Typer:
    monkeypatch.setattr("studiolo.faces.cli_study.run_engine", lambda progress=None: canned)
    monkeypatch.setattr("studiolo.study.engine.check.run_engine", lambda progress=None: canned)
    app = typer.Typer()
    register(app)

    @app.callback()
    def main() -> None:
        """Studiolo (test app)."""

    return app


def test_cli_engine_writes_the_file_and_prints_the_table(
    app: typer.Typer, canned: EngineResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["study", "--engine"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert (tmp_path / "engine-results.json").read_bytes() == render_engine_results(canned)
    for text in ("Engine beside model", "no-artifact-binding", "6,694/6,694", "7/7"):
        assert text in result.output


def test_cli_engine_check(app: typer.Typer, canned: EngineResult, tmp_path: Path) -> None:
    path = tmp_path / "engine-results.json"
    path.write_bytes(render_engine_results(canned))
    ok = CliRunner().invoke(app, ["study", "--engine", "--check", str(path)], env={"COLUMNS": "200"})
    assert ok.exit_code == 0 and "OK " in ok.output
    path.write_bytes(b"{}\n")
    bad = CliRunner().invoke(app, ["study", "--engine", "--check", str(path)], env={"COLUMNS": "200"})
    assert bad.exit_code == 1 and "FAILED" in bad.output


def test_cli_engine_fails_when_the_spec_does_not_hold(
    app: typer.Typer, canned: EngineResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = dataclasses.replace(canned, oracle_agreement=6693)
    monkeypatch.setattr("studiolo.faces.cli_study.run_engine", lambda progress=None: broken)
    result = CliRunner().invoke(app, ["study", "--engine", "--out", str(tmp_path / "e.json")])
    assert result.exit_code == 1 and "NOT" in result.output
