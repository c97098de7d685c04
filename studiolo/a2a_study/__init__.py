"""The record's operational effect as a simulation (``studiolo a2a-study``, issue 13).

Delegations to a fault-injecting remote agent on a virtual clock, decided once by a naive
requester that trusts the terminal state and once by the quiescence requester, which runs
:func:`studiolo.core.quiescence.verify_and_quiesce` itself. Stdlib plus the core; no service,
store or network. ``run_study(seed, tasks)`` → :class:`StudyResult`; ``render_results`` gives
the results file's bytes; ``check_results(path)`` recomputes and compares them.
"""

from __future__ import annotations

from pathlib import Path

from studiolo.a2a_study.model import Params
from studiolo.a2a_study.remote import RemoteTask, draw_task
from studiolo.a2a_study.render import (
    CheckOutcome,
    check_results,
    document,
    render_results,
    shape,
    summary,
    summary_line,
)
from studiolo.a2a_study.requesters import REQUESTERS, Decision, Kind, naive, quiescence
from studiolo.a2a_study.study import DEFAULT_SEED, DEFAULT_TASKS, StudyResult, Tally, World, audit, run_study

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_TASKS",
    "REQUESTERS",
    "CheckOutcome",
    "Decision",
    "Kind",
    "Params",
    "RemoteTask",
    "StudyResult",
    "Tally",
    "World",
    "audit",
    "check_results",
    "document",
    "draw_task",
    "naive",
    "quiescence",
    "render_results",
    "run_study",
    "shape",
    "shipped_results",
    "summary",
    "summary_line",
]


def shipped_results() -> Path:
    """The ``results.json`` shipped inside the package (seed 0, 10,000 tasks)."""
    return Path(__file__).resolve().parent / "results.json"
