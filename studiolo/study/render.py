"""``results.json``: deterministic bytes for a result, and the byte-for-byte check."""

from __future__ import annotations

import json
from typing import Any

from studiolo.study.controls import ControlResult
from studiolo.study.published import compare, reproduced
from studiolo.study.result import StudyResult
from studiolo.study.schedules import ENVIRONMENT, MAIN_CHAIN, MAX_ENVIRONMENT_EVENTS
from studiolo.study.table import MechanismResult

__all__ = ["SCHEMA", "document", "render_results"]

SCHEMA = "studiolo.study.results/1"

JSON = dict[str, Any]


def render_results(result: StudyResult) -> bytes:
    """Sorted keys, two-space indent, fixed separators, ASCII, one trailing newline."""
    text = json.dumps(document(result), sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=True)
    return (text + "\n").encode("ascii")


def document(result: StudyResult) -> JSON:
    """The JSON document for ``result`` (plain values only, no timestamps or paths)."""
    comparisons = compare(result)
    published_ok = all(c.matches for c in comparisons)
    return {
        "schema": SCHEMA,
        "mode": result.mode,
        "source_digest": result.source_digest,
        "schedules": _schedules(result),
        "executions": {
            "primary": result.primary_executions,
            "negative_controls": result.control_executions,
            "replay_checks": sum(2 * r.replays.accepted_runs for r in result.mechanisms),
        },
        "oracle": {"eligible": result.oracle.eligible, "ineligible": result.oracle.ineligible},
        "mechanisms": [_mechanism(r, result.schedules.schedules) for r in result.mechanisms],
        "negative_controls": [_control(c) for c in result.controls],
        "published": {
            "all_match": published_ok,
            "comparisons": [
                {"claim": c.claim, "published": c.published, "computed": c.computed, "matches": c.matches}
                for c in comparisons
            ],
        },
        "reproduced": reproduced(result),
    }


def _schedules(result: StudyResult) -> JSON:
    summary = result.schedules
    return {
        "main_chain": [str(e) for e in MAIN_CHAIN],
        "environment_events": [str(e) for e in ENVIRONMENT],
        "max_environment_events": MAX_ENVIRONMENT_EVENTS,
        "constraints": ["each environment event at most once", "expire before reassign"],
        "scenarios": summary.scenarios,
        "schedules": summary.schedules,
        "expected_schedules": summary.expected_schedules,
        "ordering_checks": [
            {
                "shape": s.shape,
                "scenarios": s.scenarios,
                "orderings_each": s.orderings_each,
                "expected_each": s.expected_each,
                "ok": s.ok,
            }
            for s in summary.shapes
        ],
        "ok": summary.ok,
    }


def _mechanism(result: MechanismResult, schedules: int) -> JSON:
    row, replays, examples = result.row, result.replays, result.counterexamples
    return {
        "mechanism": row.mechanism,
        "safe_accept": row.safe_accept,
        "unsafe_accept": row.unsafe_accept,
        "safe_reject": row.safe_reject,
        "eligible_reject": row.eligible_reject,
        "total": row.total,
        "row_sums_to_schedules": row.total == schedules,
        "replays": {
            "accepted_runs": replays.accepted_runs,
            "identical_returned_receipt": replays.identical_returned_receipt,
            "changed_digest_rejected": replays.changed_digest_rejected,
            "ok": replays.ok,
        },
        "counterexamples": {
            "unsafe_accept": [[str(e) for e in s] for s in examples.unsafe_accept],
            "eligible_reject": [[str(e) for e in s] for s in examples.eligible_reject],
        },
    }


def _verdict(accepted: bool) -> str:
    return "accept" if accepted else "reject"


def _control(control: ControlResult) -> JSON:
    return {
        "control": str(control.control),
        "description": control.description,
        "outcomes": {m: _verdict(a) for m, a in control.accepted},
        "expected": {m: _verdict(a) for m, a in control.expected},
        "matches": control.matches,
    }
