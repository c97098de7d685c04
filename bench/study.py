"""Time the bounded study in one process: the model run, then the byte-for-byte check.

Prints human-readable lines, then one final line of JSON. Each measurement is a
function returning its JSON fields; engine mode adds its own to ``MEASUREMENTS``.

    python bench/study.py
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from studiolo.study import check_results, run_model, shipped_results

Fields = dict[str, float | int | bool]
Measurement = Callable[[], Fields]


def measure_model() -> Fields:
    """One full model run (87,022 primary + 91 control executions)."""
    start = time.perf_counter()
    result = run_model()
    wall = time.perf_counter() - start
    executions = result.primary_executions + result.control_executions
    print(f"model: {executions:,} executions in {wall:.2f} s ({executions / wall:,.0f}/s)")
    return {
        "model_wall_s": round(wall, 3),
        "model_exec_per_s": round(executions / wall),
        "model_executions": executions,
    }


def measure_check() -> Fields:
    """``--check`` of the shipped results.json: a second full run plus the comparison."""
    start = time.perf_counter()
    outcome = check_results(shipped_results())
    wall = time.perf_counter() - start
    print(f"check: {'OK' if outcome.ok else 'FAILED'} in {wall:.2f} s")
    return {"check_wall_s": round(wall, 3), "check_ok": outcome.ok}


MEASUREMENTS: tuple[Measurement, ...] = (measure_model, measure_check)


def main() -> int:
    fields: Fields = {}
    for measure in MEASUREMENTS:
        fields.update(measure())
    total = float(fields["model_wall_s"]) + float(fields["check_wall_s"])
    fields["model_plus_check_wall_s"] = round(total, 3)
    print(f"model + check: {total:.2f} s")
    print(json.dumps(fields, sort_keys=True))
    return 0 if fields["check_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
