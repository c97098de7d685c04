"""The Study page: the shipped results of the bounded study (model mode and engine mode) and
of the evaluation on a repository's history (docs/evaluation.md), as tables and the
coordinates of SVG bar charts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["Bar", "EvalRow", "StudyRow", "chart", "eval_chart", "eval_rows", "study_rows"]


@dataclass(frozen=True)
class StudyRow:
    mechanism: str
    model: dict[str, int]  # safe_accept, unsafe_accept, safe_reject, eligible_reject, total
    engine: dict[str, int] | None


@dataclass(frozen=True)
class Bar:
    y: float
    width: float
    value: int
    series: str  # model-unsafe, engine-unsafe, model-eligible, engine-eligible


_STUDY_DIR = Path(__file__).resolve().parents[2] / "study"  # the shipped results, without importing the study
_EVAL_RESULTS = Path(__file__).resolve().parents[2] / "eval" / "results.json"
_KEYS = ("safe_accept", "unsafe_accept", "safe_reject", "eligible_reject", "total")


@cache
def _load() -> tuple[dict[str, Any], dict[str, Any]]:
    model = json.loads((_STUDY_DIR / "results.json").read_text(encoding="utf-8"))
    engine = json.loads((_STUDY_DIR / "engine-results.json").read_text(encoding="utf-8"))
    return model, engine


def study_rows() -> tuple[list[StudyRow], dict[str, Any]]:
    model, engine = _load()
    by_engine = {m["mechanism"]: m for m in engine.get("mechanisms", [])}
    rows = [
        StudyRow(
            m["mechanism"],
            {k: int(m[k]) for k in _KEYS},
            {k: int(by_engine[m["mechanism"]][k]) for k in _KEYS} if m["mechanism"] in by_engine else None,
        )
        for m in model["mechanisms"]
    ]
    meta = {"schedules": model["schedules"].get("expected_schedules"), "engine_ok": engine.get("ok")}
    return rows, meta


def chart(rows: list[StudyRow], width: float = 420.0, band: float = 44.0) -> list[tuple[StudyRow, list[Bar]]]:
    """Four bars per mechanism; widths on one linear scale (the largest count fills `width`)."""
    top = max([1, *(r.model["unsafe_accept"] for r in rows), *(r.model["eligible_reject"] for r in rows)])
    top = max([top, *(r.engine["unsafe_accept"] for r in rows if r.engine)])
    out = []
    for i, r in enumerate(rows):
        series = [
            ("model-unsafe", r.model["unsafe_accept"]),
            ("engine-unsafe", r.engine["unsafe_accept"] if r.engine else 0),
            ("model-eligible", r.model["eligible_reject"]),
            ("engine-eligible", r.engine["eligible_reject"] if r.engine else 0),
        ]
        bars = [Bar(i * band + 4 + j * 9, width * v / top, v, name) for j, (name, v) in enumerate(series)]
        out.append((r, bars))
    return out


@dataclass(frozen=True)
class EvalRow:
    mechanism: str
    read_policy: str
    quiescent: bool
    counts: dict[
        str, int
    ]  # tasks, task_success, accepted, unsafe_accept, eligible_reject, post_merge_breakage


_EVAL_KEYS = ("tasks", "task_success", "accepted", "unsafe_accept", "eligible_reject", "post_merge_breakage")


@cache
def _load_eval() -> dict[str, Any] | None:
    if not _EVAL_RESULTS.exists():
        return None
    data: dict[str, Any] = json.loads(_EVAL_RESULTS.read_text(encoding="utf-8"))
    return data


def eval_rows() -> tuple[list[EvalRow], dict[str, Any]]:
    """The shipped evaluation's summary rows (none when the package ships no results)."""
    doc = _load_eval()
    if doc is None:
        return [], {}
    rows = [
        EvalRow(r["mechanism"], r["read_policy"], bool(r["quiescent"]), {k: int(r[k]) for k in _EVAL_KEYS})
        for r in doc["summary"]
    ]
    config = doc["config"]
    meta = {
        "repository": config["repository"],
        "tasks": config["tasks"],
        "seeds": ", ".join(str(s) for s in config["seeds"]),
        "falsified": bool(doc["falsification"]["rejected"]),
    }
    return rows, meta


def eval_chart(
    rows: list[EvalRow], width: float = 420.0, band: float = 26.0
) -> list[tuple[EvalRow, list[Bar]]]:
    """Two bars per mechanism and read policy (unsafe accepts, eligible rejections), one scale."""
    top = max([1, *(max(r.counts["unsafe_accept"], r.counts["eligible_reject"]) for r in rows)])
    out = []
    for i, r in enumerate(rows):
        series = [
            ("model-unsafe", r.counts["unsafe_accept"]),
            ("model-eligible", r.counts["eligible_reject"]),
        ]
        bars = [Bar(i * band + 4 + j * 9, width * v / top, v, name) for j, (name, v) in enumerate(series)]
        out.append((r, bars))
    return out
