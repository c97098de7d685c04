"""The fleet benchmark's load generator client: raw HTTP/1.1 on asyncio protocols (no httpx, no h11).

Lean on purpose, since it shares the machine's cores with the server it measures:

- a request is bytes built once by the caller (`request()`); a heartbeat's are built once per
  attempt and sent as they are;
- a response is parsed as little as HTTP allows: the status line, `Content-Length` (or the
  chunked framing), `Connection: close`; the body is handed back as bytes, and only callers that
  need a field decode its JSON;
- `Conn.send` is callback based (no task, no future): the connection's protocol calls `done`
  from `data_received` once the whole response is in. `Conn.fetch` and `Conn.call` wrap it in a
  future for code that reads better as coroutines (the completion cycle, the CPU benches);
- `EventStream` reads a Server-Sent Events stream in bulk and only counts its events
  (`bytes.count`), with no per-event or per-chunk parsing.

One `Conn` is one keep-alive connection from a chosen loopback source address (127.0.0.0/8 is
all loopback on Linux; spreading agents over addresses keeps each address under the server's
per-address connection cap). A connection idle for longer than the server's keep-alive timeout
is replaced before use; a request on a reused connection that the server closed before
answering is sent once more on a new one (what HTTP clients do).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, cast

from studiolo.settings import Settings

__all__ = ["Conn", "Done", "EventStream", "HttpError", "follow", "request"]

# Reuse a connection idle for less than this: the server closes one idle for its keep-alive
# time (`Settings.keep_alive_seconds`, 30 s by default; longer than an agent's 10 s heartbeat).
_IDLE_REUSE_SECONDS = Settings().keep_alive_seconds - 2.0

# done(status, body, error): error is None when a whole response arrived.
Done = Callable[[int, bytes, "BaseException | None"], None]


class HttpError(Exception):
    def __init__(self, status: int, body: bytes, what: str) -> None:
        super().__init__(f"{what}: {status} {body[:200]!r}")
        self.status = status


def request(
    method: str, path: str, auth: bytes, body: bytes = b"", kind: bytes = b"application/json"
) -> bytes:
    """The bytes of one request (`auth` is the whole `Authorization: ...\\r\\n` line, or b"")."""
    return b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        method.encode(),
        path.encode(),
        auth,
        kind,
        len(body),
        body,
    )


def _response_end(buf: bytearray) -> tuple[int, bytes, bool, int] | None:
    """(status, body, close, bytes used) of the first whole response in `buf`, or None."""
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    head = bytes(buf[:head_end]).lower()
    status = int(head[9:12])
    close = b"\r\nconnection: close" in head
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        line_end = head.find(b"\r\n", at + 2)
        start = head_end + 4
        end = start + int(head[at + 17 : line_end if line_end > 0 else len(head)])
        return (status, bytes(buf[start:end]), close, end) if len(buf) >= end else None
    if b"\r\ntransfer-encoding: chunked" not in head:
        return status, b"", close, head_end + 4
    parts: list[bytes] = []
    at = head_end + 4
    while (line_end := buf.find(b"\r\n", at)) >= 0:
        size = int(bytes(buf[at:line_end]).split(b";", 1)[0], 16)
        if len(buf) < line_end + 2 + size + 2:
            return None
        if size == 0:
            return status, b"".join(parts), close, line_end + 4
        parts.append(bytes(buf[line_end + 2 : line_end + 2 + size]))
        at = line_end + 2 + size + 2
    return None


class _Exchange(asyncio.Protocol):
    """One connection: at most one request in flight; its response goes to `done`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.done: Done | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's do not subclass it

    def exchange(self, data: bytes, done: Done) -> None:
        assert self.transport is not None and self.done is None
        self.done = done
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.done is None or (parsed := _response_end(self.buf)) is None:
            return
        status, body, close, used = parsed
        del self.buf[:used]
        done, self.done = self.done, None
        if close:
            self.close()
        done(status, body, None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None:
            done, self.done = self.done, None
            done(0, b"", exc or ConnectionResetError("the server closed the connection"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Conn:
    def __init__(self, host: str, port: int, source: str, token: str) -> None:
        self.host, self.port, self.source = host, port, source
        self.auth = f"Authorization: Bearer {token}\r\n".encode()
        self._proto: _Exchange | None = None
        self._opening: asyncio.Future[None] | None = None  # held: the loop keeps tasks weakly
        self._last = 0.0

    def close(self) -> None:
        if self._proto is not None:
            self._proto.close()
        self._proto = None

    def send(self, data: bytes, done: Done) -> None:
        """Send one request; `done(status, body, error)` is called once, with the whole answer."""
        proto = self._proto
        if proto is not None and not proto.closed and time.monotonic() - self._last < _IDLE_REUSE_SECONDS:

            def again(status: int, body: bytes, exc: BaseException | None) -> None:
                if isinstance(exc, ConnectionError):  # closed by the server before it answered
                    self._open_then_send(data, done)
                else:
                    self._finish(done, status, body, exc)

            proto.exchange(data, again)
        else:
            self._open_then_send(data, done)

    def _open_then_send(self, data: bytes, done: Done) -> None:
        self._opening = asyncio.ensure_future(self._open_and_send(data, done))

    def _finish(self, done: Done, status: int, body: bytes, exc: BaseException | None) -> None:
        self._last = time.monotonic()
        done(status, body, exc)

    async def _open_and_send(self, data: bytes, done: Done) -> None:
        self.close()
        try:
            _, self._proto = await asyncio.get_running_loop().create_connection(
                _Exchange, self.host, self.port, local_addr=(self.source, 0)
            )
        except OSError as exc:
            done(0, b"", exc)
            return
        self._proto.exchange(data, lambda s, b, e: self._finish(done, s, b, e))

    def fetch(self, data: bytes) -> asyncio.Future[tuple[int, bytes]]:
        """`send` as a future of (status, body); a failed connection is its exception."""
        future: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()

        def done(status: int, body: bytes, exc: BaseException | None) -> None:
            if future.done():
                return
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result((status, body))

        self.send(data, done)
        return future

    async def call(
        self, method: str, path: str, body: Any = None, *, raw: bytes | None = None, decode: bool = True
    ) -> Any:
        """One request; the decoded JSON answer (when `decode`), or HttpError (non-2xx)."""
        if raw is not None:
            data = request(method, path, self.auth, raw, b"application/octet-stream")
        else:
            data = request(method, path, self.auth, b"" if body is None else json.dumps(body).encode())
        status, payload = await self.fetch(data)
        if not 200 <= status < 300:
            raise HttpError(status, payload, f"{method} {path}")
        return json.loads(payload) if decode and payload else None


class EventStream(asyncio.Protocol):
    """A `GET` of a Server-Sent Events stream: counts events until `close()`; `failed` says why
    it ended early (a non-200 status, the server's last chunk or a closed connection)."""

    def __init__(self, data: bytes, on_end: Callable[[EventStream], None]) -> None:
        self.data, self.on_end = data, on_end
        self.transport: asyncio.Transport | None = None
        self.events = 0
        self.failed: Exception | None = None
        self._head: bytearray | None = bytearray()
        self._tail = b""  # the last bytes seen, so that a marker split over two reads counts
        self._ended = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's do not subclass it
        self.transport.write(self.data)

    def data_received(self, data: bytes) -> None:
        if self._head is not None:  # the status line and headers, once
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            if int(self._head[9:12]) != 200:
                return self._end(HttpError(int(self._head[9:12]), bytes(self._head[end:]), "GET stream"))
            data, self._head = bytes(self._head[end + 2 :]), None
        seen = self._tail + data
        # An event's "event:" line follows a newline: its "id:" line, or a chunk-size line.
        self.events += seen.count(b"\nevent: ") - self._tail.count(b"\nevent: ")
        if b"\r\n0\r\n\r\n" in seen:  # the last chunk: the server ended the stream
            self._end(HttpError(0, b"", "the stream ended early"))
        self._tail = seen[-8:]

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc or ConnectionResetError("the server closed the stream"))

    def _end(self, failure: Exception | None) -> None:
        if self._ended:
            return
        self._ended, self.failed = True, failure
        if self.transport is not None:
            self.transport.close()
        self.on_end(self)

    def close(self) -> None:
        """End the stream on time (not a failure)."""
        self._end(None)


async def follow(conn: Conn, path: str, until: float) -> int:
    """Hold an event stream from `conn`'s address until `until` (loop time); the number of events
    it brought, or what ended it early raised."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[EventStream] = loop.create_future()
    data = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode() + conn.auth + b"\r\n"
    _, stream = await loop.create_connection(
        lambda: EventStream(data, ended.set_result), conn.host, conn.port, local_addr=(conn.source, 0)
    )
    timer = loop.call_at(until, stream.close)
    try:
        await ended
    finally:
        timer.cancel()
    if stream.failed is not None:
        raise stream.failed
    return stream.events
