"""Time the bounded study in one process: the model run, the byte-for-byte check, the engine.

Prints human-readable lines, then one final line of JSON. Each measurement is a
function returning its JSON fields.

    python bench/study.py            # model, check and engine
    python bench/study.py --no-engine

The engine run uses both cores (worker processes); ``engine_cpu_s`` is the CPU time of the
whole run, workers included, so a busy machine shows as wall time well above cpu / 2.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable

from studiolo.study import check_results, run_model, shipped_results
from studiolo.study.engine import run_engine

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


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_engine() -> Fields:
    """One full engine run: 87,022 + 91 decisions through the real completion transaction."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    result = run_engine()
    wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    executions = result.study.primary_executions + result.study.control_executions
    transactions = dict(result.transactions)
    print(
        f"engine: {executions:,} decisions in {wall:.1f} s ({executions / wall:,.0f}/s), "
        f"{cpu:.0f} s CPU; {transactions}; {'OK' if result.ok else 'NOT OK'}"
    )
    return {
        "engine_wall_s": round(wall, 3),
        "engine_exec_per_s": round(executions / wall),
        "engine_executions": executions,
        "engine_cpu_s": round(cpu, 1),
        "engine_commit_transactions": transactions.get("commit", 0),
        "engine_ok": result.ok,
    }


MEASUREMENTS: tuple[Measurement, ...] = (measure_model, measure_check, measure_engine)


def main(argv: list[str]) -> int:
    measurements = [m for m in MEASUREMENTS if not ("--no-engine" in argv and m is measure_engine)]
    fields: Fields = {}
    for measure in measurements:
        fields.update(measure())
    total = float(fields["model_wall_s"]) + float(fields["check_wall_s"])
    fields["model_plus_check_wall_s"] = round(total, 3)
    print(f"model + check: {total:.2f} s")
    print(json.dumps(fields, sort_keys=True))
    return 0 if fields["check_ok"] and fields.get("engine_ok", True) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
