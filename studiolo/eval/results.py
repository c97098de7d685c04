"""The results file, `--check` and `--replay` (docs/evaluation.md).

`results.json`: sorted keys, two-space indentation, one trailing newline.  Everything under a
`timing` key is wall-clock measurement; `--check` recomputes the whole evaluation and compares
the bytes of the file *without* those keys — timing fields are excluded, and the output says
so.  `--replay TRACE` re-runs the trace's cell from its header and compares every record,
`timing` left out: a changed decision (or anything else) fails it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studiolo.eval.cell import CellSpec
from studiolo.eval.metrics import percentile
from studiolo.eval.run import SCHEMA, EvalConfig, EvalResult, falsification, pins, run_eval
from studiolo.eval.trace import comparable, dump_lines, read_trace

__all__ = [
    "Outcome",
    "check_results",
    "render_results",
    "render_table",
    "replay_trace",
    "strip_timing",
    "write_traces",
]


def render_results(result: EvalResult) -> str:
    cells = result.cells
    doc = {
        "schema": SCHEMA,
        "config": result.config.to_json(),
        "pins": pins(result),
        "cells": cells,
        "summary": _summary(cells),
        "falsification": falsification(cells),
        "counterexamples": {m: f"traces/{m}.jsonl ({key})" for m, key in result.counterexamples().items()},
        "timing": {
            "wall_s": round(result.wall_s, 1),
            "note": "wall-clock fields (every `timing` key) are not compared by --check",
        },
    }
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=True) + "\n"


def strip_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if k != "timing"}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


def _summary(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per mechanism × read policy (quiescent cells apart), summed over the seeds; latency
    percentiles pooled over every accepted task of the row's cells."""
    keys = (
        "tasks",
        "task_success",
        "decisions",
        "accepted",
        "unsafe_accept",
        "eligible_reject",
        "safe_reject",
        "post_merge_breakage",
        "recovery_attempts",
        "gave_up",
    )
    rows: dict[tuple[str, str, bool], dict[str, Any]] = {}
    for c in cells:
        spec = c["cell"]
        row = rows.setdefault(
            (spec["mechanism"], spec["read_policy"], spec["quiescent"]),
            {
                "mechanism": spec["mechanism"],
                "read_policy": spec["read_policy"],
                "quiescent": spec["quiescent"],
                "seeds": [],
                **{k: 0 for k in keys},
                "unsafe_seeds": [],
            },
        )
        row["seeds"].append(spec["seed"])
        for k in keys:
            row[k] += c["counts"][k]
        if c["counts"]["unsafe_accept"]:
            row["unsafe_seeds"].append(spec["seed"])
        row.setdefault("e2e", []).extend(c["counts"]["e2e_s"])
        row.setdefault("door", []).extend(c["timing"]["door_ms"])
        for k, v in c["counts"]["evidence_totals"].items():
            row.setdefault("evidence", {}).setdefault(k, 0)
            row["evidence"][k] += v
    for row in rows.values():
        e2e, door, evidence = row.pop("e2e"), row.pop("door"), row.pop("evidence")
        n = row["accepted"]
        row["evidence_per_accepted_task"] = {k: round(v / n, 1) for k, v in evidence.items()} if n else None
        row["commit_latency_e2e_s"] = {"p50": percentile(e2e, 50), "p99": percentile(e2e, 99)}
        row["timing"] = {
            "door_ms": {"p50": percentile(door, 50), "p99": percentile(door, 99), "n": len(door)}
        }
        row["recovery_per_task"] = round(row["recovery_attempts"] / row["tasks"], 2) if row["tasks"] else 0.0
    return list(rows.values())


def render_table(doc: dict[str, Any]) -> str:
    """The summary as the Markdown table docs/evaluation.md shows (a test keeps them equal)."""
    head = (
        "| mechanism | reads | task success | accepted | unsafe accept | eligible reject | breakage "
        "| recoveries/task | e2e p50 / p99 (s) | door p50 / p99 (ms) |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = []
    for r in doc["summary"]:
        name = r["mechanism"] + (" (quiescent)" if r["quiescent"] else "")
        e2e, door = r["commit_latency_e2e_s"], r["timing"]["door_ms"]
        lines.append(
            f"| {name} | {r['read_policy']} | {r['task_success']}/{r['tasks']} | {r['accepted']} "
            f"| {r['unsafe_accept']} | {r['eligible_reject']} | {r['post_merge_breakage']} "
            f"| {r['recovery_per_task']} | {_n(e2e['p50'])} / {_n(e2e['p99'])} "
            f"| {_n(door['p50'])} / {_n(door['p99'])} |"
        )
    return head + "\n".join(lines) + "\n"


def _n(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def write_traces(result: EvalResult, directory: Path, every: bool = False) -> list[Path]:
    """Each unsafe mechanism's counterexample trace (or every cell's, with `every`)."""
    directory.mkdir(parents=True, exist_ok=True)
    chosen = {k: k for k in result.traces} if every else {m: k for m, k in result.counterexamples().items()}
    out = []
    for name, key in chosen.items():
        path = directory / (name.replace("/", "_") + ".jsonl")
        path.write_text(dump_lines(result.traces[key]), encoding="utf-8")
        out.append(path)
    return out


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str


def check_results(path: Path, repository: str, progress: Callable[[str], None] = lambda _l: None) -> Outcome:
    """Recompute the file's evaluation and compare it byte for byte, timing fields excluded."""
    shipped = json.loads(path.read_text(encoding="utf-8"))
    config = EvalConfig.from_json(shipped["config"], repository)
    fresh = json.loads(render_results(run_eval(config, progress)))
    want, got = _bytes(strip_timing(shipped)), _bytes(strip_timing(fresh))
    if want == got:
        return Outcome(True, f"OK {path}: recomputed, identical (timing fields excluded from the comparison)")
    line = _first_difference(want, got)
    same_source = shipped["pins"]["eval_source_digest"] == fresh["pins"]["eval_source_digest"]
    why = (
        "the file was edited after it was made"
        if same_source
        else "the file was made by other evaluation code: regenerate it"
    )
    return Outcome(False, f"MISMATCH {path}: first difference at line {line}; {why}")


def replay_trace(path: Path, repository: str, progress: Callable[[str], None] = lambda _l: None) -> Outcome:
    """Re-run the trace's cell and compare every record (timing excluded)."""
    records = read_trace(path)
    header = records[0]
    if header.get("kind") != "header" or "config" not in header:
        return Outcome(False, f"{path}: no header record with the evaluation's config")
    config = EvalConfig.from_json(header["config"], repository)
    cell = header["cell"]
    spec = CellSpec(cell["mechanism"], cell["read_policy"], int(cell["seed"]), bool(cell["quiescent"]))
    result = run_eval(config, progress, only=[spec])
    if result.workload.digest != header["workload"]["workload_digest"]:
        return Outcome(False, f"{path}: the repository gives another workload than the trace pins")
    fresh = result.traces[spec.key]
    for n, (old, new) in enumerate(zip(records, fresh, strict=False)):
        if comparable(old) != comparable(new):
            what = "decision" if "decision" in (old.get("kind"), new.get("kind")) else "record"
            return Outcome(
                False,
                f"DIFFERS {path}: {what} at line {n + 1} (seq {old.get('seq')}): "
                f"trace {json.dumps(comparable(old), sort_keys=True)[:300]} "
                f"replay {json.dumps(comparable(new), sort_keys=True)[:300]}",
            )
    if len(records) != len(fresh):
        return Outcome(
            False, f"DIFFERS {path}: {len(records)} records in the trace, {len(fresh)} in the replay"
        )
    decisions = sum(1 for r in records if r.get("kind") == "decision")
    return Outcome(
        True, f"OK {path}: {len(records)} records and {decisions} decisions reproduced (timing excluded)"
    )


def _bytes(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=True) + "\n"


def _first_difference(a: str, b: str) -> int:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), 1):
        if x != y:
            return n
    return min(a.count("\n"), b.count("\n")) + 1
