"""The Study page shows the shipped evaluation beside the bounded study: its chart's bars
and its table say the numbers of studiolo/eval/results.json."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient

from studiolo.faces.web.study import eval_chart, eval_rows
from tests.faces.web.conftest import sign_in

RESULTS = Path(__file__).resolve().parents[3] / "studiolo" / "eval" / "results.json"


def test_the_evaluation_rows_are_the_shipped_summary() -> None:
    rows, meta = eval_rows()
    summary = json.loads(RESULTS.read_text())["summary"]
    assert [(r.mechanism, r.read_policy, r.counts["unsafe_accept"]) for r in rows] == [
        (s["mechanism"], s["read_policy"], s["unsafe_accept"]) for s in summary
    ]
    assert meta["falsified"] is False
    bars = eval_chart(rows)
    widest = max(b.width for _row, bs in bars for b in bs)
    assert widest == 420.0  # one linear scale: the largest count fills the width
    for row, (unsafe, eligible) in ((r, bs) for r, bs in bars):
        assert (unsafe.value, eligible.value) == (row.counts["unsafe_accept"], row.counts["eligible_reject"])


def test_the_study_page_shows_the_evaluation(web: TestClient, tokens: dict[str, str]) -> None:
    sign_in(web, tokens["agent"])
    page = web.get("/ui/study")
    assert page.status_code == 200
    assert (
        "The evaluation on a repository&#39;s history" in page.text
        or "evaluation on a repository" in page.text
    )
    assert "No language model ran." in page.text
    rows, _meta = eval_rows()
    report_only = next(r for r in rows if r.mechanism == "report-only" and r.read_policy == "written")
    assert f"<td>{report_only.counts['unsafe_accept']}</td>" in page.text
