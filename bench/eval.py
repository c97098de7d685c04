"""What the completion contract costs at the door, measured in one run of `studiolo eval`.

The same cells (same seed, same read policy) with the full contract and with `report-only`
(every predicate switched off), alternated `--rounds` times on one world; the door's wall time
per completion request, pooled per mechanism. Prints lines, then one final line of JSON with
the ratio full ÷ report-only of the median and p99, and the load average before and after.

    python bench/eval.py --repo ../shared/eval/tomli.bundle --until 1da01ef --tasks 4 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import time

from studiolo.eval.cell import CellSpec
from studiolo.eval.metrics import percentile
from studiolo.eval.run import EvalConfig, run_eval


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--until", default="HEAD")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    load_before = os.getloadavg()
    config = EvalConfig(args.repo, args.until, args.tasks, seeds=(args.seed,))
    cells = []
    for _ in range(args.rounds):  # alternated, so a change in the machine's load hits both
        cells += [
            CellSpec("full-atomic", "written", args.seed),
            CellSpec("report-only", "written", args.seed),
        ]
    start = time.perf_counter()
    result = run_eval(config, print, only=cells)
    wall = time.perf_counter() - start
    door: dict[str, list[float]] = {"full-atomic": [], "report-only": []}
    for cell in result.cells:
        door[cell["cell"]["mechanism"]] += cell["timing"]["door_ms"]
    fields: dict[str, object] = {"wall_s": round(wall, 1), "rounds": args.rounds, "tasks": args.tasks}
    for name, values in door.items():
        fields[f"{name}_door_ms_p50"] = percentile(values, 50)
        fields[f"{name}_door_ms_p99"] = percentile(values, 99)
        fields[f"{name}_requests"] = len(values)
        print(f"{name}: {len(values)} requests, door p50 {fields[f'{name}_door_ms_p50']} ms")
    full, off = door["full-atomic"], door["report-only"]
    if full and off:
        fields["ratio_p50"] = round((percentile(full, 50) or 0) / (percentile(off, 50) or 1), 3)
        fields["ratio_p99"] = round((percentile(full, 99) or 0) / (percentile(off, 99) or 1), 3)
    fields["loadavg_before"] = [round(x, 2) for x in load_before]
    fields["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(fields, sort_keys=True))


if __name__ == "__main__":
    main()
