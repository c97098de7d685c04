"""The projector in a process of its own, as `studiolo serve` runs it (docs/git.md, "The
protocol"): it shares no interpreter lock with the request path, so its work (and its lower
priority, `yield_cpu`) never holds a completion up. A thread at nice 5 inside the server
did: while the kernel let it wait it could hold the GIL, and every request waited with it.

The server wakes it: the store's `on_publication` listener writes the project's id on the
child's stdin (never blocking: a full pipe means the child is busy and will read it). The
child also passes over every project on its timer (recovery, checkpoints, mirrors). Both
processes may publish (a clone publishes what is pending before it answers); a lock file
per repository serializes them (`Projector.publish`).

    python -m studiolo.git.child DATABASE_URL GIT_ROOT INTERVAL CHECKPOINT_SECONDS NICENESS [LOG]

LOG (bench/git.py): a file the child appends `version time` to each time a branch moves."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from studiolo.store import Store

__all__ = ["ProjectorProcess"]


class ProjectorProcess:
    """The child process, started and stopped with the app; `poke` wakes it for a project."""

    def __init__(
        self,
        store: Store,
        root: Path,
        interval: float,
        checkpoint_every: float,
        log: Path | None = None,
        niceness: int = 5,  # projector.NICENESS (bench/git.py --priority same: 0)
    ) -> None:
        self.store, self.root = store, root
        self.args = [store.url, str(root), str(interval), str(checkpoint_every), str(niceness)]
        self.args += [str(log)] if log else []
        self._child: subprocess.Popen[bytes] | None = None
        self._guard = threading.Lock()
        self._listening = False

    def start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._child = subprocess.Popen(
            [sys.executable, "-m", "studiolo.git.child", *self.args], stdin=subprocess.PIPE, env=env
        )
        assert self._child.stdin is not None
        os.set_blocking(self._child.stdin.fileno(), False)
        if not self._listening:
            self.store.on_publication(self.poke)
            self._listening = True

    def poke(self, project_id: str) -> None:
        child = self._child
        if child is None or child.stdin is None:
            return
        with self._guard, contextlib.suppress(BlockingIOError, BrokenPipeError, ValueError, OSError):
            os.write(child.stdin.fileno(), project_id.encode()[:200] + b"\n")

    def stop(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        with self._guard, contextlib.suppress(OSError):
            assert child.stdin is not None
            child.stdin.close()  # end of input: the child stops after its pass
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _listen(projector: object) -> None:
    from studiolo.git.projector import Projector

    assert isinstance(projector, Projector)
    for line in sys.stdin.buffer:
        name = line.strip().decode(errors="replace")
        if name:
            projector.poke(name)
    projector.stop()  # the server closed the pipe, or went away


def _log(path: Path) -> Callable[[str, int], None]:
    out = path.open("a", buffering=1)

    def note(_project: str, version: int) -> None:
        out.write(f"{version} {time.time()}\n")

    return note


def main(argv: list[str]) -> None:
    from studiolo.git.projector import Projector

    url, root, interval, checkpoint, niceness, *log = argv
    store = Store(url)
    noted = _log(Path(log[0])) if log else None
    projector = Projector(
        store,
        Path(root),
        interval=float(interval),
        checkpoint_every=float(checkpoint),
        on_published=noted,
        niceness=int(niceness),
    )
    projector.start()
    try:
        _listen(projector)
    finally:
        projector.stop()
        store.dispose()


if __name__ == "__main__":
    main(sys.argv[1:])
