"""What a projector pass costs in CPU, deterministic enough to compare two versions of the
code on a loaded machine (docs/git.md, "Measured"): the wall-clock lag of `bench/git.py`
moves with the load; the process's own CPU time per publication does much less.

A project of `--files` files (100 a directory) imported and published
(`first_publication_cpu_s`), then `--completions` completions, the projector publishing
after every `--per-pass` of them (as it does when woken under load). Each completion changes
one file: a blob, two trees, a commit, and the note's blob, trees and commit. Only the
projector's calls are timed, in process CPU time; the completions in `--rounds` parts, the
median of their CPU milliseconds a publication. `--profile` prints cProfile's top functions.

    python bench/git_pass.py [--files 10000] [--completions 600] [--per-pass 4] [--rounds 3]

Last line: JSON, with the load average.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]

from studiolo.core.model import FileMode  # noqa: E402
from studiolo.git.projector import Projector  # noqa: E402
from tests.world import World, build_world  # noqa: E402


def _path(i: int) -> str:
    return f"src/d{i // 100:03d}/f{i % 100:03d}.txt"


def _import(w: World, files: int) -> None:
    blobs = {
        _path(i): (w.coord.put_blob(w.admin, f"file {i}\n".encode()), FileMode.REGULAR) for i in range(files)
    }
    w.coord.import_tree(w.admin, w.project_id, blobs, {"commit": "0" * 40, "ref": "bench"})


def _complete(w: World, i: int, files: int) -> None:
    task = w.new_task(f"bench {i}", scope=["src/**"])
    att = w.coord.claim(w.agent, task.id, 3600)
    cand = w.candidate(att, {_path((i * 37) % files): f"changed {i}\n".encode()})
    w.complete(task, att, cand, [w.receipt(cand).id])


def _timed_publish(
    projector: Projector, project_id: str, profile: cProfile.Profile | None
) -> tuple[int, float]:
    start = time.process_time()
    if profile is not None:
        profile.enable()
    n = projector.publish(project_id)
    if profile is not None:
        profile.disable()
    return n, time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--completions", type=int, default=600)
    ap.add_argument("--per-pass", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="the completions in this many parts, a median each")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="studiolo-gitpass-") as tmp:
        w = build_world(Path(tmp))
        _import(w, args.files)
        # the world's clock: a checkpoint once, not one a second of this run's wall time
        projector = Projector(w.coord.store, Path(tmp) / "git", checkpoint_every=1e9, clock=w.clock)
        _, first_cpu = _timed_publish(projector, w.project_id, None)
        profile = cProfile.Profile() if args.profile else None
        part = args.completions // args.rounds
        per_pub = []
        for r in range(args.rounds):
            done, cpu = 0, 0.0
            for i in range(r * part, (r + 1) * part):
                _complete(w, i, args.files)
                if (i + 1) % args.per_pass == 0 or i + 1 == (r + 1) * part:
                    n, spent = _timed_publish(projector, w.project_id, profile)
                    done, cpu = done + n, cpu + spent
            assert done == part, (done, part)
            per_pub.append(cpu / done * 1000)
            print(f"part {r}: {done} publications, {cpu:.3f} s CPU, {per_pub[-1]:.3f} ms each", flush=True)
        if profile is not None:
            pstats.Stats(profile).sort_stats("tottime").print_stats(18)
        w.coord.store.dispose()
    result = {
        "bench": "git_pass",
        "files": args.files,
        "completions": part * args.rounds,
        "per_pass": args.per_pass,
        "first_publication_cpu_s": round(first_cpu, 3),
        "cpu_ms_per_publication": round(statistics.median(per_pub), 3),
        "parts_ms": [round(x, 3) for x in per_pub],
        "loadavg_start": load,
        "loadavg_end": os.getloadavg()[0],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
