"""What one cell's trace says, with the oracle's labels: the measures of docs/evaluation.md.

Counts are deterministic (they go into `--check`); wall-clock latencies are returned apart,
under `timing`, and `--check` leaves them out."""

from __future__ import annotations

from collections import Counter
from typing import Any

from studiolo.eval.oracle import Label, label_decisions

__all__ = ["cell_metrics", "percentile"]

Record = dict[str, Any]


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * q // 100)))
    return ordered[int(rank) - 1]


def cell_metrics(records: list[Record]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the deterministic measures, the timing measures) of one cell."""
    labels = label_decisions(records)
    decisions = [r for r in records if r["kind"] == "decision"]
    header = records[0]
    final = next(r for r in records if r["kind"] == "final")
    tasks = len(header["workload"]["tasks"])
    suites = {r["after"]: r["passed"] for r in records if r["kind"] == "suite"}
    accepted = [d for d in decisions if d["accepted"]]
    unsafe = [d for d in accepted if not labels[d["seq"]].eligible]
    success = [d for d in accepted if d.get("adjudicated") and suites.get(d["seq"])]
    recoveries = sum(1 for r in records if r["kind"] == "recovery")
    receipts = sum(1 for r in records if r["kind"] == "receipt")
    n_acc = len(accepted)
    counts = {
        "tasks": tasks,
        "task_success": len(success),
        "decisions": len(decisions),
        "accepted": n_acc,
        "safe_accept": n_acc - len(unsafe),
        "unsafe_accept": len(unsafe),
        "safe_reject": sum(1 for d in decisions if not d["accepted"] and not labels[d["seq"]].eligible),
        "eligible_reject": sum(1 for d in decisions if not d["accepted"] and labels[d["seq"]].eligible),
        "unsafe_kinds": dict(sorted(Counter(k for d in unsafe for k in labels[d["seq"]].violated).items())),
        "unsafe_examples": [_example(d, labels[d["seq"]]) for d in unsafe[:3]],
        "post_merge_breakage": sum(1 for d in accepted if suites.get(d["seq"]) is False),
        "recovery_attempts": recoveries,
        "recovery_per_task": round(recoveries / tasks, 3) if tasks else 0.0,
        "gave_up": sum(1 for r in records if r["kind"] == "gave-up"),
        "final_suite_passes": final["suite_passes"],
        "mirror_matches_ledger": final["mirror_matches_ledger"],
        "evidence_totals": _evidence(final, receipts, accepted),
        "e2e_s": [d["e2e_s"] for d in accepted],
        "turns": records[-1]["turn"],
    }
    door = [d["timing"]["door_ms"] for d in decisions]
    e2e = [r["timing"]["e2e_wall_s"] for r in records if r["kind"] == "suite"]
    timing = {
        "door_ms": door,
        "accept_to_suite_wall_s": {"p50": percentile(e2e, 50), "p99": percentile(e2e, 99)},
    }
    return counts, timing


def _evidence(final: Record, receipts: int, accepted: list[Record]) -> dict[str, int]:
    """What the cell stored: candidate bytes uploaded, receipts, verifier log bytes, audit
    events, and the git objects its publications write (the projector's rule)."""
    return {
        "candidate_bytes": final["candidate_bytes"],
        "receipts": receipts,
        "log_bytes": final["log_bytes"],
        "audit_events": final["audit_events"],
        "git_objects": sum(d["git_objects"] for d in accepted),
    }


def _example(d: Record, label: Label) -> dict[str, Any]:
    return {"seq": d["seq"], "task": d["index"], "agent": d["agent"], "violated": list(label.violated)}
