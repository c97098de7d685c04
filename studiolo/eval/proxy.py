"""A seeded fault-injecting TCP proxy between one agent client and the service.

Each accepted connection draws its faults from `Random(f"{seed}:{n}")` (n = the connection's
ordinal), so the same seed gives the same faults per connection whatever the threads do:
with probability `reset` the connection is reset before any byte passes (SO_LINGER 0: the
client sees ECONNRESET), every chunk is delayed by a latency drawn from `latency_ms`, and
with probability `stall` a chunk waits `stall_seconds` more, and with probability `cut` a
chunk resets both sides instead of passing (a request or an answer lost in mid-exchange).
Counters say what happened.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

__all__ = ["FaultProxy", "Faults"]


@dataclass(frozen=True)
class Faults:
    latency_ms: tuple[float, float] = (0.0, 20.0)
    stall: float = 0.02
    stall_seconds: float = 0.5
    reset: float = 0.05
    cut: float = 0.01  # a chunk that resets the connection in mid-exchange instead of passing


@dataclass
class _Counts:
    connections: int = 0
    resets: int = 0
    stalls: int = 0
    cuts: int = 0
    chunks: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class FaultProxy:
    def __init__(self, target: tuple[str, int], seed: int, faults: Faults | None = None) -> None:
        self.target = target
        self.seed = seed
        self.faults = faults or Faults()
        self.counts = _Counts()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name=f"fault-proxy-{seed}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def summary(self) -> dict[str, int]:
        c = self.counts
        return {
            "connections": c.connections,
            "resets": c.resets,
            "stalls": c.stalls,
            "cuts": c.cuts,
            "chunks": c.chunks,
        }

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self.counts.lock:
                n = self.counts.connections
                self.counts.connections += 1
            rng = random.Random(f"{self.seed}:{n}")
            if rng.random() < self.faults.reset:
                with self.counts.lock:
                    self.counts.resets += 1
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client, rng), daemon=True).start()

    def _serve(self, client: socket.socket, rng: random.Random) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            client.close()
            return
        lock = threading.Lock()  # the two directions share the connection's random stream
        back = threading.Thread(target=self._pump, args=(upstream, client, rng, lock), daemon=True)
        back.start()
        self._pump(client, upstream, rng, lock)
        back.join(timeout=60)
        client.close()
        upstream.close()

    def _pump(self, src: socket.socket, dst: socket.socket, rng: random.Random, lock: threading.Lock) -> None:
        low, high = self.faults.latency_ms
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with lock:
                    delay = rng.uniform(low, high) / 1000
                    stalled = rng.random() < self.faults.stall
                    cut = rng.random() < self.faults.cut
                with self.counts.lock:
                    self.counts.chunks += 1
                    self.counts.stalls += stalled
                    self.counts.cuts += cut
                if cut:
                    for s in (src, dst):
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    raise ConnectionResetError("cut by the fault proxy")
                time.sleep(delay + (self.faults.stall_seconds if stalled else 0.0))
                dst.sendall(data)
        except OSError:  # a reset on one side: end both directions
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            return
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)  # pass the half-close on; the other direction goes on
