"""The fleet benchmark's load generator: a raw asyncio HTTP/1.1 client (no httpx, no h11).

One `Conn` is one keep-alive connection from a chosen loopback source address (127.0.0.0/8
is all loopback on Linux; spreading agents over addresses keeps each address under the
server's per-address connection cap). A connection idle for longer than the server's
keep-alive timeout is replaced before use; a request on a reused connection that the server
closed before answering is sent once more on a new one (what HTTP clients do).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from studiolo.settings import Settings

__all__ = ["Conn", "HttpError"]

# Reuse a connection idle for less than this: the server closes one idle for its keep-alive
# time (`Settings.keep_alive_seconds`, 30 s by default; longer than an agent's 10 s heartbeat).
_IDLE_REUSE_SECONDS = Settings().keep_alive_seconds - 2.0


class HttpError(Exception):
    def __init__(self, status: int, body: bytes, what: str) -> None:
        super().__init__(f"{what}: {status} {body[:200]!r}")
        self.status = status


class Conn:
    def __init__(self, host: str, port: int, source: str, token: str) -> None:
        self.host, self.port, self.source = host, port, source
        self._auth = f"Authorization: Bearer {token}\r\n".encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._last = 0.0

    async def _open(self) -> None:
        self.close()
        self._reader, self._writer = await asyncio.open_connection(
            self.host, self.port, local_addr=(self.source, 0)
        )

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def call(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None) -> Any:
        """Send one request; return the decoded JSON answer, or raise HttpError (non-2xx)."""
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        kind = b"application/octet-stream" if raw is not None else b"application/json"
        head = b"".join(
            (
                f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n".encode(),
                self._auth,
                b"Content-Type: " + kind + b"\r\n",
                f"Content-Length: {len(data)}\r\n\r\n".encode(),
            )
        )
        reused = self._writer is not None and time.monotonic() - self._last < _IDLE_REUSE_SECONDS
        if not reused:
            await self._open()
        try:
            status, payload = await self._exchange(head + data)
        except (ConnectionError, asyncio.IncompleteReadError):
            if not reused:
                raise
            await self._open()  # the server closed the idle connection first: once more
            status, payload = await self._exchange(head + data)
        self._last = time.monotonic()
        if not 200 <= status < 300:
            raise HttpError(status, payload, f"{method} {path}")
        return json.loads(payload) if payload else None

    async def _exchange(self, request: bytes) -> tuple[int, bytes]:
        assert self._reader is not None and self._writer is not None
        self._writer.write(request)
        status, headers = await _head(self._reader)
        if headers.get("transfer-encoding") == "chunked":
            payload = b"".join([chunk async for chunk in _chunks(self._reader)])
        else:
            payload = await self._reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection") == "close":
            self.close()
        return status, payload

    async def stream(self, path: str, until: float) -> AsyncIterator[bytes]:
        """GET a Server-Sent Events stream; yield its chunks until `until` (loop time)."""
        await self._open()
        assert self._reader is not None and self._writer is not None
        self._writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n".encode() + self._auth + b"\r\n")
        status, _ = await _head(self._reader)
        if status != 200:
            raise HttpError(status, b"", f"GET {path}")
        loop = asyncio.get_running_loop()
        chunks = _chunks(self._reader)
        while (left := until - loop.time()) > 0:
            try:
                yield await asyncio.wait_for(anext(chunks), left)
            except TimeoutError:
                break
            except StopAsyncIteration:
                raise HttpError(0, b"", f"GET {path}: the stream ended early") from None
        self.close()


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    line = await reader.readline()
    if not line:
        raise ConnectionResetError("the server closed the connection")
    status = int(line.split(b" ", 2)[1])
    headers = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip().lower()
    return status, headers


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        size = int((await reader.readline()).strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return
        data = await reader.readexactly(size)
        await reader.readexactly(2)
        yield data
