"""Process CPU per task view, in process on SQLite (what the tombstone read costs a view).

    python bench/view_cpu.py [--views 3000] [--deleted]

One accepted task (one candidate, one receipt); `--deleted` deletes its published bytes on
request first, so the view lists a tombstone. CPU is this process's `time.process_time()`
over the views, after 200 to warm up; the load average goes with the line. To compare two
checkouts deterministically, run each under `valgrind --tool=callgrind` with two `--views`
counts and divide the difference of the instruction totals by the difference of the counts
(docs/benchmarks.md). The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent  # off the path: bench/http.py would shadow `http`
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from tests.world import build_world  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", type=int, default=3000)
    parser.add_argument("--deleted", action="store_true", help="delete the published bytes first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        w = build_world(Path(tmp))
        task = w.new_task()
        attempt = w.coord.claim(w.agent, task.id)
        cand = w.candidate(attempt, {"src/answer.txt": b"42\n"})
        w.complete(task, attempt, cand, [w.receipt(cand).id])
        if args.deleted:
            w.coord.delete_bytes(w.admin, w.project_id, cand.files["src/answer.txt"] or "", "bench")
        for _ in range(200):
            w.coord.task_view(w.agent, task.id)
        start = time.process_time()
        for _ in range(args.views):
            w.coord.task_view(w.agent, task.id)
        per_view = (time.process_time() - start) / args.views
        w.coord.store.dispose()
    load = os.getloadavg()[0]
    print(f"{per_view * 1e6:.1f} µs CPU per task view ({args.views} views, load {load:.2f})")
    out = {
        "views": args.views,
        "deleted": args.deleted,
        "cpu_us_per_view": round(per_view * 1e6, 1),
        "load": load,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
