"""The completion transaction through the door, one at a time: the store's own cost per completion.

    python bench/door.py [--n 80] [--sqlite] [--callgrind PREFIX]

A fresh ledger (PostgreSQL from `STUDIOLO_TEST_DATABASE_URL`, a fresh database; `--sqlite`: a
temporary file) seeded with `--n` ready tasks (claimed, candidate, passing receipt,
`tests/scale/cluster.py`); then `Coordinator.complete` for each, in this process, no HTTP.
Prints one JSON line: process CPU ms per completion (mean, median), wall ms (median), Python
calls per completion (cProfile, a second pass-free count: `--calls`), the load average.

`--callgrind PREFIX`: run under `valgrind --tool=callgrind --instr-atstart=no`; the script
touches `PREFIX.ready` after five warm-up completions, waits for `PREFIX.on`, and touches
`PREFIX.done` at the end, waiting for `PREFIX.off`, so that `callgrind_control -i on/off`
counts the client's instructions for the timed completions only (`bench/door_callgrind.sh`
does all of it). Instruction counts do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# The repository root, not this directory: bench/http.py would shadow the standard library's.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]

from studiolo.service import Coordinator, make_request  # noqa: E402
from studiolo.settings import Settings  # noqa: E402
from studiolo.store import Store  # noqa: E402
from tests.scale.cluster import ready_completions, seed_project  # noqa: E402
from tests.store.pgdb import fresh_database  # noqa: E402

WARM = 5


@contextlib.contextmanager
def _ledger(sqlite: bool) -> Iterator[str]:
    if not sqlite:
        with fresh_database(os.environ["STUDIOLO_TEST_DATABASE_URL"]) as url:
            yield url
        return
    with tempfile.TemporaryDirectory() as d:
        yield Settings.sqlite_url(Path(d) / "ledger.db")


def _wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=80)
    ap.add_argument("--sqlite", action="store_true")
    ap.add_argument("--calls", action="store_true", help="count Python calls (cProfile) instead of timing")
    ap.add_argument("--callgrind", default="")
    args = ap.parse_args()
    cpu: list[float] = []
    wall: list[float] = []
    profile = cProfile.Profile() if args.calls else None
    with _ledger(args.sqlite) as url:
        items = ready_completions(seed_project(url, agents=4, tasks=args.n, hot=0))
        coord = Coordinator(Store(url), Settings(database_url=url))
        who = {it["token"]: coord.authenticate(it["token"]) for it in items}
        for n, item in enumerate(items):
            if n == WARM and args.callgrind:
                Path(args.callgrind + ".ready").touch()
                _wait_for(args.callgrind + ".on")
            if n == WARM and profile is not None:
                profile.enable()
            q = make_request(task_id=item["task"], **item["request"])
            c0, w0 = time.process_time(), time.perf_counter()
            coord.complete(who[item["token"]], q)
            if n >= WARM:
                cpu.append(time.process_time() - c0)
                wall.append(time.perf_counter() - w0)
        if profile is not None:
            profile.disable()
        if args.callgrind:
            Path(args.callgrind + ".done").touch()
            _wait_for(args.callgrind + ".off")
        coord.store.dispose()
    calls = round(pstats.Stats(profile).total_calls / len(cpu), 1) if profile is not None else None  # type: ignore[attr-defined]
    print(
        json.dumps(
            {
                "back_end": "sqlite" if args.sqlite else "postgresql",
                "completions": len(cpu),
                "cpu_ms_mean": round(1000 * statistics.mean(cpu), 3),
                "cpu_ms_median": round(1000 * statistics.median(cpu), 3),
                "wall_ms_median": round(1000 * statistics.median(wall), 3),
                "calls_per_completion": calls,
                "load": Path("/proc/loadavg").read_text().split()[:3],
            }
        )
    )


if __name__ == "__main__":
    main()
