"""Running the HTTP face under uvicorn: in the foreground, or in a thread (tests, bench).

No `limit_concurrency`: it counts sockets, so idle ones made uvicorn answer 503 to everyone.
The protocol closes slow and surplus connections; `InFlightLimit` counts requests.
"""

from __future__ import annotations

import resource
import socket
import threading
import time
from types import TracebackType

import uvicorn

from studiolo.faces.http.app import create_app
from studiolo.faces.http.protocol import ConnectionGuard, guarded_protocol
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__ = ["ServerThread", "free_port", "raise_open_files_limit", "serve"]


def _config(coordinator: Coordinator, settings: Settings, host: str, port: int) -> uvicorn.Config:
    app = create_app(coordinator, settings)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
        http=guarded_protocol(ConnectionGuard.from_settings(settings)),
    )


def serve(coordinator: Coordinator, settings: Settings) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM)."""
    raise_open_files_limit()
    uvicorn.Server(_config(coordinator, settings, settings.host, settings.port)).run()


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
