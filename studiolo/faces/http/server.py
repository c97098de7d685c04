"""Running the HTTP face under uvicorn: in the foreground, or in a thread (tests, bench).

No `limit_concurrency`: it counts sockets, so idle ones made uvicorn answer 503 to everyone.
The protocol closes slow and surplus connections; `InFlightLimit` counts requests.

`serve(..., workers=N)`: the parent binds the socket, lets go of its own ledger connections,
and forks N processes that each build their own door over the same ledger and accept on the
shared socket (the kernel hands each connection to one of them). Writes from all of them
queue on the store's writer lock (SQLite) or writer gate (PostgreSQL). A worker that dies is
replaced, in the same slot; SIGTERM or SIGINT stops them all. The per-process limits
(connections per address, requests in flight, streams per principal) and dashboard sessions
are per worker. Only the worker in slot 0 runs the retention sweeper's timer (`slot_settings`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType, TracebackType

import uvicorn

from studiolo.faces.http.app import create_app
from studiolo.faces.http.protocol import ConnectionGuard, guarded_protocol
from studiolo.observe import logs, multiprocess
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = [
    "GC_OLD_THRESHOLD",
    "GC_YOUNG_THRESHOLD",
    "ServerThread",
    "free_port",
    "raise_open_files_limit",
    "serve",
    "settle_heap",
    "slot_settings",
]

GC_YOUNG_THRESHOLD = 5000  # the cyclic collector's first threshold while serving (Python's: 700)
GC_OLD_THRESHOLD = 100  # middle-generation collections before a full one is considered (Python's: 10)


def _config(coordinator: Coordinator, settings: Settings, host: str, port: int) -> uvicorn.Config:
    app = create_app(coordinator, settings)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
        timeout_keep_alive=max(1, round(settings.keep_alive_seconds)),
        http=guarded_protocol(ConnectionGuard.from_settings(settings)),
        ws="none",  # no WebSocket routes: an upgrade must never hand a guarded socket elsewhere
        loop="auto",  # uvloop (a dependency where it builds): less CPU per request (docs/benchmarks.md)
    )


def serve(coordinator: Coordinator, settings: Settings, workers: int = 1) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM), in this process or in `workers` forks.
    Logs go to stderr as JSON lines (`STUDIOLO_LOG=off`: none); with workers, the metrics are
    kept in files they share (`STUDIOLO_METRICS_DIR`, else a temporary directory)."""
    raise_open_files_limit()
    if settings.log_format == "json":
        logs.to_stream()
    if workers <= 1:
        config = _config(coordinator, settings, settings.host, settings.port)
        coordinator.warm_auth_cache()
        settle_heap()
        uvicorn.Server(config).run()
        return
    sock = _listen(settings.host, settings.port)
    coordinator.store.dispose()  # no ledger connection may cross a fork
    shared = multiprocess.enable(Path(settings.metrics_dir) if settings.metrics_dir else None)
    settings = replace(settings, metrics_dir=str(shared))
    door, store = type(coordinator), type(coordinator.store)
    url, pool = settings.database_url, settings.db_pool_size
    try:
        worker = lambda slot: _worker(door(store(url, pool_size=pool), slot_settings(settings, slot)), sock)  # noqa: E731
        _Supervisor(worker, workers, died=lambda pid: multiprocess.process_died(pid, shared)).run()
    finally:
        multiprocess.disable(shared)


def slot_settings(settings: Settings, slot: int) -> Settings:
    """The settings of the worker in `slot` (0..N-1): only slot 0 sweeps retention on a timer
    (one sweeper per `serve`, not N racing for the same expired evidence)."""
    return settings if slot == 0 else replace(settings, retention_sweep_seconds=0.0)


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket the workers share (bound before any app or thread exists)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _worker(coordinator: Coordinator, sock: socket.socket) -> None:
    config = _config(coordinator, coordinator.settings, coordinator.settings.host, coordinator.settings.port)
    coordinator.warm_auth_cache()  # a restart under a fleet: one read, not one per agent
    settle_heap()
    uvicorn.Server(config).run(sockets=[sock])


def settle_heap(young: int = GC_YOUNG_THRESHOLD, old: int = GC_OLD_THRESHOLD) -> None:
    """Just before serving: move what start-up built (the modules and the app, about 225,000
    objects) out of the cyclic collector's reach, let the youngest generation fill up more
    before a collection, and consider a full collection after `old` collections of the middle
    generation instead of 10.

    A full collection holds the GIL, so the event loop, for as long as it scans: measured at
    1,200 connections, 60-240 ms of CPU each, several times a minute, and at 5,000 (two
    workers) 160-180 ms about once a minute per worker; they were the heartbeats' p99
    (docs/benchmarks.md). Frozen objects are never scanned (nor freed by the collector:
    start-up objects live as long as the process anyway); a larger first threshold means fewer
    short-lived request objects are promoted; Python's own rule (a full collection only once
    the objects promoted since the last one are a quarter of those that survived it) still
    bounds the cyclic garbage left waiting."""
    gc.collect()
    gc.freeze()
    _, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, old)


class _Supervisor:
    """Forks the workers, each in a slot 0..N-1 (`target(slot)`), replaces one that dies in
    its slot, and stops them all on SIGTERM / SIGINT."""

    def __init__(
        self, target: Callable[[int], None], workers: int, died: Callable[[int], None] = lambda pid: None
    ) -> None:
        self._target = target
        self._died = died  # told the id of each worker that ended
        self._wanted = workers
        self._children: dict[int, int] = {}  # pid → slot
        self._stopping = False

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        while not self._stopping:
            while len(self._children) < self._wanted and not self._stopping:
                slot = min(set(range(self._wanted)) - set(self._children.values()))
                self._children[self._fork(slot)] = slot
            try:
                pid, _ = os.wait()
            except ChildProcessError:
                continue
            except InterruptedError:  # pragma: no cover - PEP 475 retries wait() itself
                continue
            self._children.pop(pid, None)
            self._died(pid)
        self._reap()

    def _fork(self, slot: int) -> int:
        pid = os.fork()
        if pid == 0:  # the worker: uvicorn installs its own signal handlers
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            code = 0
            try:
                self._target(slot)
            except BaseException:  # a worker that fails exits; the supervisor replaces it
                code = 1
            finally:
                sys.stdout.flush()
                os._exit(code)
        return pid

    def _stop(self, signum: int, _frame: FrameType | None) -> None:
        self._stopping = True
        for pid in self._children:
            with _suppress_gone():
                os.kill(pid, signal.SIGTERM)

    def _reap(self) -> None:
        deadline = time.monotonic() + 10
        while self._children and time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                time.sleep(0.05)
            self._children.pop(pid, None)
        for pid in self._children:
            with _suppress_gone():
                os.kill(pid, signal.SIGKILL)


def _suppress_gone() -> contextlib.AbstractContextManager[None]:
    return contextlib.suppress(ProcessLookupError)


def raise_open_files_limit(wanted: int = 65536) -> int:
    """Raise this process's soft limit on open files toward the hard one; return the new soft limit.

    Each connection is a file descriptor: at the common default of 1,024, a thousand sockets
    (held open by anyone) would stop `accept` for everyone.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class ServerThread:
    """A real uvicorn socket on 127.0.0.1 and a free port, in a daemon thread."""

    def __init__(self, coordinator: Coordinator, settings: Settings, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(_config(coordinator, settings, "127.0.0.1", self.port))
        self._thread = threading.Thread(target=self._server.run, name="studiolo-http", daemon=True)

    def __enter__(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
