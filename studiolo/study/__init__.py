"""The report's bounded interleaving study (SPEC §4), reproduced in model mode.

``run_model`` enumerates the 6,694 schedules, labels each with the independent
oracle, runs all thirteen mechanisms plus the negative controls and replay
checks, and returns a :class:`StudyResult`; ``render_results`` turns it into the
deterministic bytes of ``results.json``; ``check_results`` recomputes and
compares byte for byte.
"""

from __future__ import annotations

from pathlib import Path

from studiolo.study.check import CheckOutcome, Difference, check_results
from studiolo.study.model_run import run_model
from studiolo.study.provenance import RESULTS_NAME, source_digest
from studiolo.study.published import Comparison, compare, reproduced
from studiolo.study.render import render_results
from studiolo.study.result import OracleTotals, StudyResult
from studiolo.study.space import Progress, StudySpace, prepare, rows
from studiolo.study.table import Decision, MechanismResult, MechanismRow, Outcome, ReplayCheck, tabulate

__all__ = [
    "CheckOutcome",
    "Comparison",
    "Decision",
    "Difference",
    "MechanismResult",
    "MechanismRow",
    "OracleTotals",
    "Outcome",
    "Progress",
    "ReplayCheck",
    "StudyResult",
    "StudySpace",
    "check_results",
    "compare",
    "prepare",
    "render_results",
    "reproduced",
    "rows",
    "run_model",
    "shipped_results",
    "source_digest",
    "tabulate",
]


def shipped_results() -> Path:
    """The ``results.json`` shipped inside the package."""
    return Path(__file__).resolve().parent / RESULTS_NAME
