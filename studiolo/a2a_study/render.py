"""The results as JSON: the full document (the results file, deterministic bytes), the one-line
summary (the command's last line), and ``--check`` (recompute, compare byte for byte)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studiolo.a2a_study.study import StudyResult, Tally, World, nearest_rank, run_study

__all__ = [
    "SCHEMA",
    "CheckOutcome",
    "check_results",
    "document",
    "render_results",
    "shape",
    "summary",
    "summary_line",
]

SCHEMA = "studiolo.a2a_study.results/1"
NOTE = "a simulation of the conditions of seed 003's record on a virtual clock, not its data"

JSON = dict[str, Any]
MAX_CHECK_TASKS = 10_000_000  # a results file names its own run; refuse one no one would make


def render_results(result: StudyResult) -> bytes:
    """Sorted keys, two-space indent, ASCII, one trailing newline: the same bytes every run."""
    text = json.dumps(document(result), sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=True)
    return (text + "\n").encode("ascii")


def document(result: StudyResult) -> JSON:
    return {"schema": SCHEMA, "params": result.params.document(), **summary(result)}


def summary(result: StudyResult) -> JSON:
    return {
        "note": NOTE,
        "seed": result.seed,
        "tasks": result.world.tasks,
        "world": _world(result.world),
        "requesters": {t.requester: _tally(t) for t in result.tallies},
        "shape": shape(result),
    }


def summary_line(result: StudyResult) -> str:
    return json.dumps(summary(result), sort_keys=True, separators=(",", ":"))


def shape(result: StudyResult) -> JSON:
    """The expected shape, checked: naive premature exactly on the injected races, the
    quiescence requester never premature and never finalizing tampered work."""
    naive, quiesced = result.tally("naive"), result.tally("quiescence")
    checks = {
        "naive_premature_on_every_race": naive.premature == result.world.late_tasks,
        "quiescence_never_premature": quiesced.premature == 0,
        "quiescence_never_finalizes_tampered": quiesced.tampered_finalized == 0,
    }
    return {**checks, "ok": all(checks.values())}


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 4) if whole else 0.0


def _counts(counter: Counter[str]) -> JSON:
    return {"total": sum(counter.values()), "by": dict(sorted(counter.items()))}


def _world(world: World) -> JSON:
    return {
        "artifacts": world.artifacts,
        "detached_tasks": world.detached_tasks,
        "late_tasks": world.late_tasks,
        "late_tasks_percent": _percent(world.late_tasks, world.tasks),
        "late_tasks_with_detached_artifact": world.late_detached_tasks,
        "lost_artifacts": world.lost_artifacts,
        "lost_artifacts_percent": _percent(world.lost_artifacts, world.artifacts),
        "lost_tasks": world.lost_tasks,
        "tampered_tasks": _counts(world.tampered),
        "terminal_states": dict(sorted(world.terminal.items())),
    }


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _latency(values: list[int]) -> JSON:
    return {
        "tasks": len(values),
        "median_s": _seconds(nearest_rank(values, 50)),
        "p99_s": _seconds(nearest_rank(values, 99)),
        "max_s": _seconds(max(values) if values else None),
    }


def _tally(tally: Tally) -> JSON:
    return {
        "finalized": tally.finalized,
        "premature": tally.premature,
        "premature_with_detached_artifact": tally.premature_detached,
        "tampered_finalized": tally.tampered_finalized,
        "integrity_failures_caught": _counts(tally.integrity_failed),
        "indeterminate": _counts(tally.indeterminate),
        "added_latency": {
            "detached": _latency(tally.added_detached_ms),
            "other": _latency(tally.added_other_ms),
        },
    }


@dataclass(frozen=True)
class CheckOutcome:
    ok: bool
    message: str


def check_results(path: Path) -> CheckOutcome:
    """Recompute the file's seed and task count with the current model; compare the bytes."""
    try:
        found = path.read_bytes()
        shipped = json.loads(found)
        seed, tasks = int(shipped["seed"]), int(shipped["tasks"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return CheckOutcome(False, f"FAILED: cannot read a results file at {path}: {exc}")
    if seed < 0 or not 1 <= tasks <= MAX_CHECK_TASKS:
        return CheckOutcome(False, f"FAILED {path}: no run has seed {seed} and {tasks} tasks")
    expected = render_results(run_study(seed, tasks))
    if found == expected:
        return CheckOutcome(True, f"OK {path}: byte-identical to a fresh run (seed {seed}, {tasks:,} tasks)")
    line = _first_differing_line(expected, found)
    return CheckOutcome(
        False,
        f"FAILED {path}: differs from a fresh run (seed {seed}, {tasks:,} tasks) at line {line}; "
        "regenerate it with `studiolo a2a-study --out` if the model changed on purpose",
    )


def _first_differing_line(expected: bytes, found: bytes) -> int:
    pairs = zip(expected.splitlines(), found.splitlines(), strict=False)
    shorter = min(len(expected.splitlines()), len(found.splitlines()))
    return next((n for n, (a, b) in enumerate(pairs, 1) if a != b), shorter + 1)
