"""``engine-results.json``: deterministic bytes for an engine run.

The document has the model file's sections (schedules, executions, oracle, mechanisms,
negative controls) and, instead of the comparison with the report, the comparison with the
model: both rows, the schedules where they differ and the reasons.  No ids, no times, no
paths: a run on any machine gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from studiolo.study.engine.compare import RowComparison
from studiolo.study.engine.result import EXPECTED_FULL_ATOMIC, EngineResult
from studiolo.study.provenance import package_dir, source_files
from studiolo.study.render import document
from studiolo.study.table import MechanismRow

__all__ = [
    "ENGINE_RESULTS_NAME",
    "ENGINE_SCHEMA",
    "engine_document",
    "engine_source_digest",
    "render_engine_results",
]

ENGINE_SCHEMA = "studiolo.study.engine-results/1"
ENGINE_RESULTS_NAME = "engine-results.json"

JSON = dict[str, Any]


def engine_source_digest() -> str:
    """The model's source digest over the same files, leaving out ``engine-results.json``.

    The engine file lives in the study package, so it cannot cover itself.
    """
    base = package_dir()
    hasher = hashlib.sha256()
    for path in source_files(base):
        name = path.relative_to(base).as_posix()
        if name == ENGINE_RESULTS_NAME:
            continue
        data = path.read_bytes()
        hasher.update(b"%s\0%d\0" % (name.encode(), len(data)))
        hasher.update(data)
    return "sha256:" + hasher.hexdigest()


def render_engine_results(result: EngineResult) -> bytes:
    """Sorted keys, two-space indent, fixed separators, ASCII, one trailing newline."""
    text = json.dumps(
        engine_document(result), sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=True
    )
    return (text + "\n").encode("ascii")


def engine_document(result: EngineResult) -> JSON:
    body = document(result.study)
    del body["published"], body["reproduced"]
    body["schema"] = ENGINE_SCHEMA
    body["full_atomic"] = {
        "expected": list(EXPECTED_FULL_ATOMIC),
        "exact": result.full_atomic_exact,
        "oracle_agreement": result.oracle_agreement,
        "oracle_agrees_on_every_schedule": result.oracle_agrees,
    }
    body["model_comparison"] = {
        "all_explained": result.differences_explained,
        "rows": [_comparison(c) for c in result.comparisons],
    }
    body["rejection_reasons"] = {mechanism: dict(counts) for mechanism, counts in result.reasons}
    body["transactions"] = dict(result.transactions)
    body["ok"] = result.ok
    return body


def _counts(row: MechanismRow) -> list[int]:
    return [row.safe_accept, row.unsafe_accept, row.safe_reject, row.eligible_reject]


def _comparison(comparison: RowComparison) -> JSON:
    return {
        "mechanism": comparison.mechanism,
        "model": _counts(comparison.model),
        "engine": _counts(comparison.engine),
        "same_decisions": comparison.same,
        "model_only_accepts": comparison.model_only_accepts,
        "engine_only_accepts": comparison.engine_only_accepts,
        "explanations": [
            {"name": x.name, "reason": x.text, "schedules": n} for x, n in comparison.explanations
        ],
        "explained": comparison.same or comparison.explained,
    }
