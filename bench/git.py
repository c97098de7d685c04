"""Publication against completion on a 10,000-file repository (docs/git.md, "Measured").

1. A project of `--files` files (100 a directory) imported in one edit; the projector
   publishes it (`first_publication_s`).
2. latency_ratio: the completion's own latency (`Coordinator.complete`, one at a time) with
   the projector running beside it over the latency with it stopped (SIGSTOP), in
   alternating blocks so machine noise hits both alike. Target ≤ 1.1: publication is off
   the completion's critical path.
3. lag: `--clients` threads complete `--completions` tasks as fast as the ledger takes
   them, the projector (its own process, as `studiolo serve` runs it in its own thread)
   publishing meanwhile; each publication's lag is the time its commit reached the branch
   minus its ledger commit time. Target: lag p99 ≤ 1 s at that rate.

`--mode serve` (the default) runs the projector as `studiolo serve` does: a process of its
own (`studiolo.git.child`), woken through its stdin by the store after each write that
logs a change (`on_publication`), a pass over every project on the timer; "off" is SIGSTOP.
`--mode thread`: the same projector as a thread of the benchmark's process, woken alike
("off": the thread stopped). `--mode poll`: the set-up before both, a process of its own
polling on the timer.

Prints human lines, then a final line of JSON (with the load average).

    python bench/git.py [--files 10000] [--completions 1000] [--clients 8] [--interval 0.5]
                        [--mode thread|process]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]

from studiolo.core.model import Attempt, Candidate, FileMode, Task  # noqa: E402
from studiolo.git.child import ProjectorProcess  # noqa: E402
from studiolo.git.projector import Projector  # noqa: E402
from tests.world import World, build_world  # noqa: E402

Prepared = tuple[Task, Attempt, Candidate, list[str]]

_CHILD = """
import sys, time
from pathlib import Path
from studiolo.git.projector import Projector, yield_cpu
from studiolo.git.repository import BRANCH
from studiolo.store import Store

store = Store(sys.argv[1])
interval = float(sys.argv[4])  # as Projector._loop: a pass, then the timer; 0: back to back
projector = Projector(store, Path(sys.argv[2]), checkpoint_every=3600.0)
if sys.argv[5] == "nice":
    yield_cpu()  # as Projector._loop does in `studiolo serve`
log = open(sys.argv[3], "a", buffering=1)
while True:
    pid = store.read(lambda tx: tx.publications.projects())[-1]
    n = projector.publish(pid)
    if n:
        log.write(f"{projector.repo(pid).tip(BRANCH)[1]} {time.time()}\\n")
    time.sleep(interval if n or interval else 0.02)
"""


def _path(i: int) -> str:
    return f"src/d{i // 100:03d}/f{i % 100:03d}.txt"


def _import(w: World, n: int) -> None:
    files = {
        _path(i): (w.coord.put_blob(w.admin, f"file {i}\n".encode()), FileMode.REGULAR) for i in range(n)
    }
    w.coord.import_tree(w.admin, w.project_id, files, {"commit": "0" * 40, "ref": "bench"})


def _prepared(w: World, paths: list[str]) -> list[Prepared]:
    out = []
    for i, path in enumerate(paths):
        task = w.new_task(f"bench {i}", scope=["src/**"])
        att = w.coord.claim(w.agent, task.id, 3600)
        cand = w.candidate(att, {path: f"changed {i}\n".encode()})
        out.append((task, att, cand, [w.receipt(cand).id]))
    return out


def _timed(w: World, item: Prepared) -> float:
    t0 = time.perf_counter()
    w.complete(*item)
    return time.perf_counter() - t0


def _versions(w: World) -> dict[int, float]:
    pubs = w.coord.store.read(lambda tx: tx.publications.after(w.project_id, 0, 1_000_000))
    return {p.version: p.at for p in pubs}


class _Process:
    """The projector in a process of its own (`--mode poll`: polling; `--mode serve`: as
    serve runs it, woken); off: SIGSTOP."""

    def __init__(self, w: World, tmp: Path, interval: float, priority: str, woken: bool = False) -> None:
        self.log = tmp / "published.log"
        self.serve: ProjectorProcess | None = None
        if woken:
            nice = 0 if priority == "same" else 5
            self.serve = ProjectorProcess(w.coord.store, tmp / "git", interval, 3600.0, self.log, nice)
            self.serve.start()
            assert self.serve._child is not None
            self.child = self.serve._child
            return
        args = [w.coord.store.url, str(tmp / "git"), str(self.log), str(interval), priority]
        self.child = subprocess.Popen([sys.executable, "-c", _CHILD, *args])

    def published(self) -> list[tuple[int, float]]:
        if not self.log.is_file():
            return []
        return [(int(v), float(t)) for v, t in (line.split() for line in self.log.read_text().splitlines())]

    def off(self) -> None:
        os.kill(self.child.pid, signal.SIGSTOP)

    def on(self) -> None:
        os.kill(self.child.pid, signal.SIGCONT)

    def close(self) -> None:
        self.on()
        if self.serve is not None:
            self.serve.stop()
            return
        self.child.kill()
        self.child.wait()


class _Thread:
    """The projector as `studiolo serve` runs it (`--mode thread`); off: the thread stopped."""

    def __init__(self, w: World, tmp: Path, interval: float, priority: str) -> None:
        self._log: list[tuple[int, float]] = []
        self._guard = threading.Lock()
        self.projector = Projector(
            w.coord.store, tmp / "git", interval=interval, checkpoint_every=3600.0, on_published=self._note
        )
        if priority == "same":
            import studiolo.git.projector as module

            module.NICENESS = 0
        self.projector.start()

    def _note(self, _project: str, version: int) -> None:
        with self._guard:
            self._log.append((version, time.time()))

    def published(self) -> list[tuple[int, float]]:
        with self._guard:
            return list(self._log)

    def off(self) -> None:
        self.projector.stop()

    def on(self) -> None:
        self.projector.start()

    def close(self) -> None:
        self.projector.stop()


Publisher = _Process | _Thread


def _wait(pub: Publisher, version: int, timeout: float = 600.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        done = pub.published()
        if done and done[-1][0] >= version:
            return
        time.sleep(0.05)
    raise TimeoutError(f"the projector did not reach version {version}")


def _lags(w: World, pub: Publisher, since: int) -> list[float]:
    moved = pub.published()
    out = []
    for version, at in sorted(_versions(w).items()):
        if version <= since:
            continue
        reached = next(t for v, t in moved if v >= version)
        out.append(reached - at)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--completions", type=int, default=1000)
    ap.add_argument("--latency", type=int, default=200, help="completions per side of the latency ratio")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument(
        "--interval",
        type=float,
        default=0.5,
        help="the projector's timer (STUDIOLO_GIT_INTERVAL); 0: back to back",
    )
    ap.add_argument(
        "--priority", choices=["nice", "same"], default="nice", help="the projector's, as serve's"
    )
    ap.add_argument("--mode", choices=["serve", "thread", "poll"], default="serve", help="see the docstring")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        w = build_world(Path(tmp) / "ledger", clock=time.time)
        _import(w, args.files)
        if args.mode == "thread":
            pub: Publisher = _Thread(w, Path(tmp), args.interval, args.priority)
        else:
            pub = _Process(w, Path(tmp), args.interval, args.priority, woken=args.mode == "serve")
        try:
            t0 = time.time()
            head = max(_versions(w))
            _wait(pub, head)
            first = time.time() - t0
            print(f"first publication of {args.files} files: {first:.1f} s")
            paths = [_path(i) for i in range(args.latency * 2 + args.completions)]
            lat_items = _prepared(w, paths[: args.latency * 2])
            on, off = [], []
            for block in range(0, len(lat_items), 20):
                stopped = (block // 20) % 2 == 0
                pub.off() if stopped else pub.on()
                (off if stopped else on).extend(_timed(w, item) for item in lat_items[block : block + 20])
            pub.on()
            ratio = statistics.median(on) / statistics.median(off)
            print(
                f"completion latency median: on {statistics.median(on) * 1000:.2f} ms,"
                f" off {statistics.median(off) * 1000:.2f} ms, ratio {ratio:.3f}"
            )
            _wait(pub, max(_versions(w)))
            since = max(_versions(w))
            items = _prepared(w, paths[args.latency * 2 :])
            t1 = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(lambda item: w.complete(*item), items))
            elapsed = time.perf_counter() - t1
            _wait(pub, max(_versions(w)))
            lags = sorted(_lags(w, pub, since))
        finally:
            pub.close()
    rate = args.completions / elapsed
    p50, p99 = lags[len(lags) // 2], lags[min(len(lags) - 1, int(len(lags) * 0.99))]
    print(
        f"{rate:.1f} completions/s with {args.clients} clients; publication lag p50 {p50 * 1000:.0f} ms,"
        f" p99 {p99 * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms"
    )
    print(
        json.dumps(
            {
                "files": args.files,
                "first_publication_s": round(first, 2),
                "latency_ratio": round(ratio, 3),
                "completion_ms_on": round(statistics.median(on) * 1000, 3),
                "completion_ms_off": round(statistics.median(off) * 1000, 3),
                "completions_per_s": round(rate, 1),
                "clients": args.clients,
                "interval_s": args.interval,
                "priority": args.priority,
                "mode": args.mode,
                "lag_p50_s": round(p50, 3),
                "lag_p99_s": round(p99, 3),
                "lag_max_s": round(lags[-1], 3),
                "loadavg": Path("/proc/loadavg").read_text().split()[:3],
            }
        )
    )


if __name__ == "__main__":
    main()
