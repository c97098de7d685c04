"""What one CLI call costs an agent: `studiolo --help` and a worker command against a live
server (`studiolo task show`), against the same interpreter's bare start (`python -c pass`).

    python bench/cli.py [--runs 15] [--cli "COMMAND"]   (default: the `studiolo` script)

The server is `studiolo run` (the demo project, seeded on a fresh SQLite ledger) in a
subprocess; its tokens come from the state directory it writes. The three commands are
timed interleaved, so machine noise hits them alike; the figures are medians of wall time
from spawn to exit. The last line is JSON; `cli_ratio` is task show ÷ bare start.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_CLI: list[str] = []  # how to run `studiolo`, when --cli names another build


def studiolo_argv() -> list[str]:
    """The `studiolo` console script next to this interpreter (what an agent runs)."""
    if _CLI:
        return list(_CLI)
    script = Path(sys.executable).parent / "studiolo"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from studiolo.faces.cli import main; main()"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, proc: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    # A socket, not urllib: bench/http.py would shadow the standard library's `http` here.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


@contextmanager
def live_server(workdir: Path) -> Iterator[dict[str, Any]]:
    """`studiolo run` on a fresh ledger; yields its saved state (url, tokens, task ids)."""
    port = _free_port()
    state_dir = workdir / "state"
    argv = [*studiolo_argv(), "run", "--database-url", f"sqlite:///{workdir / 'ledger.db'}"]
    argv += ["--port", str(port), "--state-dir", str(state_dir)]
    proc = subprocess.Popen(argv, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        yield json.loads((state_dir / "demo-tokens.json").read_text())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of `argv`."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu() - cpu


def child_env() -> dict[str, str]:
    """The commands' environment: this one, with Python's bytecode cache allowed.

    An installed package carries its bytecode (pip compiles it at install) and a checkout
    writes it on first import, unless PYTHONDONTWRITEBYTECODE is set (some sandboxes set
    it): then every call compiles Studiolo's sources again (~10% of a `task show`), which
    is not what an agent's machine does. The warm-up run below writes the cache."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def bytecode_cached(env: dict[str, str]) -> bool | None:
    """Whether the client module the `studiolo` script imports has its bytecode cached
    (None for another build, `--cli`: this script cannot tell what that one imports)."""
    if _CLI:
        return None
    probe = "import importlib.util, os, studiolo.client as c; "
    probe += "print(os.path.exists(importlib.util.cache_from_source(c.__file__)))"
    argv = [sys.executable, "-c", probe]
    out = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def measure(runs: int, saved: dict[str, Any]) -> tuple[dict[str, float], dict[str, float], bool | None]:
    """Median wall and median CPU seconds per command, and whether bytecode was cached."""
    env = child_env()
    env.update(
        STUDIOLO_URL=saved["url"],
        STUDIOLO_TOKEN=saved["principals"]["agent-a"]["token"],
        STUDIOLO_CONFIG=os.devnull,
    )
    task_id = next(iter(saved["tasks"].values()))
    commands = {
        "bare": [sys.executable, "-c", "pass"],
        "help": [*studiolo_argv(), "--help"],
        "task_show": [*studiolo_argv(), "task", "show", task_id],
    }
    for argv in commands.values():
        wall(argv, env)  # warm the page cache and the bytecode cache
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(wall(argv, env))
    med = {name: statistics.median(w for w, _ in ts) for name, ts in times.items()}
    cpu = {name: statistics.median(c for _, c in ts) for name, ts in times.items()}
    return med, cpu, bytecode_cached(env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--cli", help="the command that runs studiolo (to compare two builds)")
    args = parser.parse_args()
    _CLI[:] = shlex.split(args.cli) if args.cli else []
    with tempfile.TemporaryDirectory() as tmp, live_server(Path(tmp)) as saved:
        med, cpu, cached = measure(args.runs, saved)
    print(f"medians of {args.runs}          wall        CPU (user + system)")
    for name, label in (
        ("bare", "python -c pass"),
        ("help", "studiolo --help"),
        ("task_show", "studiolo task show"),
    ):
        print(f"{label:<20} {med[name] * 1000:8.1f} ms  {cpu[name] * 1000:8.1f} ms")
    result = {
        "cli_help_s": round(med["help"], 4),
        "cli_task_show_s": round(med["task_show"], 4),
        "cli_ratio": round(med["task_show"] / med["bare"], 2),
        "bare_start_s": round(med["bare"], 4),
        "cli_cpu_ratio": round(cpu["task_show"] / cpu["bare"], 2),  # less sensitive to load
        "bytecode_cached": cached,
        "loadavg": os.getloadavg()[0],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
