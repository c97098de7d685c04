"""The bounded study in engine mode (SPEC §4): the same schedules and controls through the
real completion transaction on a real SQLite ledger.

``run_engine`` explores every schedule with every mechanism's door (the real
``Coordinator.complete`` with predicates switched off) and returns an :class:`EngineResult`:
the model file's shape plus the comparison with the model and the oracle;
``render_engine_results`` gives the deterministic bytes of ``engine-results.json`` and
``check_engine_results`` recomputes and compares them.  Unlike the rest of
``studiolo.study`` this subpackage depends on the service, the store and the core.
"""

from __future__ import annotations

from pathlib import Path

from studiolo.study.engine.check import check_engine_results
from studiolo.study.engine.compare import EXPLANATIONS, Explanation, RowComparison
from studiolo.study.engine.doors import DOORS, Door
from studiolo.study.engine.explore import EngineDecision, Exploration, explore
from studiolo.study.engine.render import (
    ENGINE_RESULTS_NAME,
    engine_document,
    engine_source_digest,
    render_engine_results,
)
from studiolo.study.engine.result import EngineResult
from studiolo.study.engine.run import run_engine
from studiolo.study.provenance import package_dir

__all__ = [
    "DOORS",
    "ENGINE_RESULTS_NAME",
    "EXPLANATIONS",
    "Door",
    "EngineDecision",
    "EngineResult",
    "Explanation",
    "Exploration",
    "RowComparison",
    "check_engine_results",
    "engine_document",
    "engine_source_digest",
    "explore",
    "render_engine_results",
    "run_engine",
    "shipped_engine_results",
]


def shipped_engine_results() -> Path:
    """The ``engine-results.json`` shipped inside the study package."""
    return package_dir() / ENGINE_RESULTS_NAME
