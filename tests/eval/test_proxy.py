"""The fault-injecting proxy on real sockets: bytes pass, resets happen, the seed decides."""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Iterator

import pytest

from studiolo.eval.proxy import FaultProxy, Faults


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[:2]
    stop.set()
    thread.join()
    server.close()


def _exchange(port: int, payload: bytes) -> bytes | None:
    """The echo of `payload` through the proxy, or None when the connection was reset."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            got = b""
            while chunk := s.recv(65536):
                got += chunk
            return got
    except (ConnectionResetError, BrokenPipeError):
        return None
    except OSError as exc:  # a reset that lands before our shutdown: the socket is no longer connected
        if exc.errno == errno.ENOTCONN:
            return None
        raise


def test_bytes_pass_through_with_latency_and_stalls(echo: tuple[str, int]) -> None:
    faults = Faults(latency_ms=(1, 5), stall=0.5, stall_seconds=0.05, reset=0.0, cut=0.0)
    with FaultProxy(echo, seed=3, faults=faults) as proxy:
        payload = bytes(range(256)) * 1000
        assert _exchange(proxy.port, payload) == payload
        assert proxy.summary()["chunks"] >= 2


def test_the_seed_decides_which_connections_are_reset(echo: tuple[str, int]) -> None:
    faults = Faults(latency_ms=(0, 0), stall=0.0, reset=0.3, cut=0.0)
    patterns = []
    for _ in range(2):
        with FaultProxy(echo, seed=7, faults=faults) as proxy:
            patterns.append([_exchange(proxy.port, b"ping") is None for _ in range(20)])
            assert proxy.summary()["resets"] == sum(patterns[-1])
    assert patterns[0] == patterns[1]
    assert 0 < sum(patterns[0]) < 20
    with FaultProxy(echo, seed=8, faults=faults) as other:
        assert [_exchange(other.port, b"ping") is None for _ in range(20)] != patterns[0]


def test_a_cut_resets_the_exchange_midway(echo: tuple[str, int]) -> None:
    faults = Faults(latency_ms=(0, 0), stall=0.0, reset=0.0, cut=1.0)
    with FaultProxy(echo, seed=1, faults=faults) as proxy:
        assert _exchange(proxy.port, b"ping") in (None, b"")
        assert proxy.summary()["cuts"] == 1
