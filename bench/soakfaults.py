"""The soak's fault loop (bench/soak.py): replicas killed with SIGKILL while a completion is in
flight on them, restarted from a warm spare, and crash-restarts of the database.

- `Inflight` listens on a UDP port for the clients' `["s", replica, rid]` (a completion sent)
  and `["e", rid]` (its answer came, or that replica was given up) and knows which
  completions are open on which replica.
- `WarmReplica` is a replica whose next process is started ahead of time: it has imported
  the service and waits on its stdin; a restart is a SIGKILL and a line to the spare, which
  then only binds its port, opens the ledger and serves (kill → `/healthz` is no longer
  dominated by a Python start and the imports: `python bench/soak.py --probe-restarts 3`).
- `Faults` runs the loop: every `kill_every` seconds it waits (up to `aim_for` seconds) for
  an open completion on a replica it may kill (one replica is always left answering) and
  kills that one, or a random one if none came; now and then it crash-restarts PostgreSQL.
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tests.scale.cluster import Cluster, Replica

__all__ = ["Faults", "Inflight", "WarmReplica"]

_WARM = (
    "import sys\n"
    "from studiolo.faces.cli import main\n"
    "import studiolo.faces.http.app, studiolo.faces.http.server, studiolo.service, uvicorn\n"
    "if sys.stdin.readline().strip() == 'go':\n"
    "    main()\n"
)


class WarmReplica(Replica):
    """A replica restarted from a spare process that has already imported the service."""

    def __init__(self, url: str, log: Path, warm: bool) -> None:
        super().__init__(url, log)
        self.warm = warm
        self._spare: subprocess.Popen[bytes] | None = None

    def _argv(self, code: str) -> list[str]:
        return [sys.executable, "-c", code, "serve", "--database-url", self.db_url, "--port", str(self.port)]

    def _spawn(self, code: str, stdin: int | None) -> subprocess.Popen[bytes]:
        with self._log.open("ab") as out:
            return subprocess.Popen(self._argv(code), stdin=stdin, stdout=out, stderr=subprocess.STDOUT)

    def launch(self) -> None:
        if not self.warm:
            super().launch()
            return
        spare = self._spare or self._spawn(_WARM, subprocess.PIPE)
        stdin: IO[bytes] | None = spare.stdin
        assert stdin is not None
        stdin.write(b"go\n")
        stdin.close()
        self.proc = spare
        self._spare = self._spawn(_WARM, subprocess.PIPE)  # the next one imports while this serves

    def stop(self) -> None:
        super().stop()
        spare, self._spare = self._spare, None
        if spare is not None:
            if spare.poll() is None:
                spare.kill()
                spare.wait()
            if spare.stdin is not None:
                spare.stdin.close()


class Inflight:
    """Which completions are open on which replica, from the clients' UDP datagrams."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port: int = self.sock.getsockname()[1]
        self._open: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="inflight", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, _ = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            msg = json.loads(data)
            with self._lock:
                if msg[0] == "s":
                    self._open[msg[2]] = (int(msg[1]), time.monotonic())
                else:
                    self._open.pop(msg[1], None)

    def pick(self, allowed: set[int], wait: float) -> tuple[int, str] | None:
        """An open completion on one of `allowed` replicas, waiting up to `wait` seconds."""
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                now = time.monotonic()
                for rid, (r, sent) in self._open.items():
                    if r in allowed and now - sent < 5.0:
                        return r, rid
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.002)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


class Faults:
    """Kills aimed at in-flight completions, recovering in threads of their own, and database
    crash-restarts (after every replica recovered). Every fault is a window (start → all it
    took down answers again) and a recovery time; every aimed kill is recorded."""

    def __init__(
        self,
        cluster: Cluster,
        inflight: Inflight,
        kill_every: float,
        pg_restart: Callable[[], None] | None,
        pg_restarts: int,
        seconds: float,
        aim_for: float = 3.0,
    ) -> None:
        self.cluster, self.inflight, self.kill_every = cluster, inflight, kill_every
        self.aim_for, self.pg_restart = aim_for, pg_restart
        self.rng = random.Random(7)
        spacing = seconds / (pg_restarts + 1)
        self._pg_at = [spacing * (i + 1) for i in range(pg_restarts)] if pg_restart else []
        self.seconds = seconds
        self.windows: list[tuple[float, float]] = []
        self.recovery: dict[str, list[float]] = {"replica_kill": [], "pg_restart": []}
        self.kills: list[dict[str, Any]] = []  # replica, rid (None: no completion was open), at
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)
        self._lock = threading.Lock()
        self._recovering: set[int] = set()
        self._recoveries: list[threading.Thread] = []

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(300)

    def _run(self) -> None:
        while not self._stop.wait(self.kill_every):
            if time.monotonic() - self._started > self.seconds:
                break
            if self._pg_at and time.monotonic() - self._started >= self._pg_at[0]:
                self._pg_at.pop(0)
                self._join_recoveries()
                self._fault("pg_restart", self._restart_pg)
                continue
            self._kill_one()
        self._join_recoveries()

    def _kill_one(self) -> None:
        n = len(self.cluster.replicas)
        with self._lock:
            up = {i for i in range(n) if i not in self._recovering}
        if not up or (n > 1 and len(up) < 2):
            return
        aimed = self.inflight.pick(up, self.aim_for)
        victim, rid = aimed if aimed is not None else (self.rng.choice(sorted(up)), None)
        with self._lock:
            self._recovering.add(victim)
        replica = self.cluster.replicas[victim]
        replica.kill()  # right away, from this thread: the completion may still be in flight
        at = time.time()
        self.kills.append({"type": "kill", "replica": victim, "rid": rid, "at": at})
        thread = threading.Thread(target=self._recover, args=(victim, at), daemon=True)
        thread.start()
        self._recoveries.append(thread)

    def _recover(self, index: int, began: float) -> None:
        replica = self.cluster.replicas[index]

        def restart() -> None:
            replica.launch()
            replica.wait_healthy(180.0)

        try:
            self._fault("replica_kill", restart, began=began)
        finally:
            with self._lock:
                self._recovering.discard(index)

    def _join_recoveries(self) -> None:
        for thread in self._recoveries:
            thread.join(300)
        self._recoveries.clear()

    def _fault(self, kind: str, act: Callable[[], None], began: float | None = None) -> None:
        began = time.time() if began is None else began
        try:
            act()
        except Exception as exc:  # a fault that did not recover is a finding, not a crash
            self.errors.append(f"{kind}: {exc!r}")
            return
        self.recovery[kind].append(time.time() - began)
        self.windows.append((began, time.time()))

    def _restart_pg(self) -> None:
        assert self.pg_restart is not None
        self.pg_restart()
        for replica in self.cluster.replicas:
            replica.wait_healthy(180.0)  # /healthz reads the ledger: the pool reconnected

    def during(self, at: float) -> bool:
        return any(a <= at <= b for a, b in self.windows)
