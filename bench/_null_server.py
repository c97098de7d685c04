"""A null server for the fleet generator's self-check (`bench/fleet.py --null-server`).

    python -c "from bench._null_server import main; main()" --port P [--events-per-s 3]

HTTP/1.1 on uvloop with canned answers for every route of the fleet's cycle, about as long as
Studiolo's (the fields the cycle reads are there; a claim gets a new attempt id), keep-alive,
no authentication, no ledger. An event stream gets the chunked head and comment Studiolo sends,
then `--events-per-s` events a second (spread evenly over the streams; ~3 a second is what a
stream of a fleet's project brings at one completion per agent per 180 s). It lets the
generator's own CPU per request be measured with a server that costs next to nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from typing import cast

import uvloop

_TICK = 0.02  # the streams' events go out in 50 slices a second
_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncache-control: no-cache\r\nx-accel-buffering: no\r\n"
    b"content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n"
)


def _chunk(text: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(text), text)


def _json(fields: dict[str, object], pad_to: int) -> bytes:
    """A JSON object with `fields`, padded with a note to about `pad_to` bytes (Studiolo's sizes)."""
    body = json.dumps(fields).encode()
    return json.dumps({**fields, "note": "x" * max(0, pad_to - len(body) - 12)}).encode()


_DIGEST = "sha256:" + "0" * 64
_ANSWERS = {
    "heartbeat": _json({"id": "att_0", "lease_expires_at": 0, "fence": 1}, 330),
    "task": _json({"id": "tsk_0", "contract_hash": "0" * 64, "state": "open"}, 900),
    "blob": _json({"digest": _DIGEST, "size": 6}, 90),
    "candidate": _json({"id": "cnd_0", "digest": _DIGEST, "dependency_digest": _DIGEST}, 620),
    "receipt": _json({"id": "rcp_0"}, 700),
    "completion": _json({"task_id": "tsk_0", "state": "done"}, 560),
    "health": _json({"status": "ok"}, 0),
}
_EVENT = (
    b"id: 1\nevent: task.completed\ndata: "
    + _json({"seq": 1, "kind": "task.completed", "project_id": "prj_0"}, 320)
    + b"\n\n"
)


def _route(method: bytes, path: bytes) -> str:
    if path.endswith(b"/heartbeat"):
        return "heartbeat"
    if path.endswith(b"/attempts"):
        return "claim"
    for suffix, name in ((b"/blobs", "blob"), (b"/candidates", "candidate"), (b"/receipts", "receipt")):
        if path.endswith(suffix):
            return name
    if path.endswith(b"/complete"):
        return "completion"
    if b"/events/stream" in path:
        return "stream"
    return "task" if method == b"GET" and path.startswith(b"/v1/tasks/") else "health"


def _length(head: bytes) -> int:
    at = head.find(b"\r\ncontent-length:")
    if at < 0:
        return 0
    end = head.find(b"\r\n", at + 2)
    return int(head[at + 17 : end if end >= 0 else None])


class _Null(asyncio.Protocol):
    def __init__(self, server: NullServer) -> None:
        self.server = server
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's do not subclass it

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            head = bytes(self.buf[:end]).lower()
            length = _length(head)
            if len(self.buf) < end + 4 + length:
                return
            del self.buf[: end + 4 + length]
            method, path, _ = head.split(b" ", 2)
            self.answer(method.upper(), path)

    def answer(self, method: bytes, path: bytes) -> None:
        assert self.transport is not None
        route = _route(method, path)
        if route == "stream":
            self.transport.write(_STREAM_HEAD + _chunk(b": studiolo events\n\n"))
            self.server.streams.append(self.transport)
            return
        if route == "claim":
            body = _json({"id": f"att_{next(self.server.ids):026d}", "fence": 1}, 330)
        else:
            body = _ANSWERS[route]
        status = b"201 Created" if method == b"POST" and route != "heartbeat" else b"200 OK"
        head = (
            b"HTTP/1.1 %s\r\nserver: uvicorn\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
        )
        self.transport.write(head % (status, len(body)) + body)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport in self.server.streams:
            self.server.streams.remove(self.transport)


class NullServer:
    def __init__(self, events_per_s: float) -> None:
        self.streams: list[asyncio.Transport] = []
        self.ids = itertools.count()
        self.slices = max(1, round(1 / (_TICK * events_per_s))) if events_per_s > 0 else 0
        self.tick = 0

    def send_events(self) -> None:
        """One slice of the streams gets an event; every stream gets `events_per_s` a second."""
        loop = asyncio.get_running_loop()
        loop.call_later(_TICK, self.send_events)
        self.tick += 1
        event = _chunk(_EVENT)
        for stream in self.streams[self.tick % self.slices :: self.slices]:
            stream.write(event)

    async def serve(self, port: int) -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Null(self), "127.0.0.1", port, backlog=4096)
        if self.slices:
            loop.call_later(_TICK, self.send_events)
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--events-per-s", type=float, default=3.0, help="events a second on each stream")
    args = ap.parse_args()
    uvloop.run(NullServer(args.events_per_s).serve(args.port))


if __name__ == "__main__":
    main()
