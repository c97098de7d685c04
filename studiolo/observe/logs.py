"""Structured logs: one JSON object a line.

`JsonLog` writes the two kinds of line the service makes on every request and every state
change, straight to its stream (stderr under `studiolo serve`): `studiolo.request`, one a
request (id, method, route template, status, duration, the caller's principal id when the
face knew it), and `studiolo.event`, one a committed state change (the audit event's seq,
project, kind, actor, subject and the request id that caused it). Neither carries a token, a
header, a body, a query string nor an event's data: what could hold a secret stays out.

They bypass the `logging` module: a record, its handler and its formatter cost a request
more than the request's metrics (bench/http.py --observe). The rest of the `studiolo`
loggers (warnings, errors) go through `logging` with the same JSON shape (`to_stream`).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from studiolo.core.model import Event

__all__ = ["JsonLines", "JsonLog", "detach", "to_stream"]

_JSON = json.JSONEncoder(separators=(",", ":"), default=str)
_FIELDS = "studiolo_fields"  # a record's extra fields (`logger.info(..., extra={_FIELDS: {...}})`)


class _Clock:
    """`2026-12-05T10:39:02.123Z` for now, the whole second's text made once a second."""

    def __init__(self) -> None:
        self._second = (-1, "")

    def stamp(self, now: float) -> str:
        second = int(now)
        known, text = self._second
        if known != second:
            text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = (second, text)
        return f"{text}.{int((now - second) * 1000):03d}Z"


class JsonLog:
    """The request and event lines, written whole (one `write` a line, under a lock)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._lock = threading.Lock()
        self._clock = _Clock()

    def request(
        self, request_id: str, method: str, route: str, status: int, seconds: float, principal: str | None
    ) -> None:
        # request_id is hex, method one of a known few, status an int: only route and principal
        # are encoded (a template and an id, but never trusted to need no escaping)
        who = "null" if principal is None else _JSON.encode(principal)
        line = (
            f'{{"ts":"{self._clock.stamp(time.time())}","level":"info","logger":"studiolo.request",'
            f'"msg":"request","request_id":"{request_id}","method":"{method}","route":{_JSON.encode(route)},'
            f'"status":{status},"duration_ms":{seconds * 1000:.3f},"principal":{who}}}\n'
        )
        with self._lock:
            self._stream.write(line)

    def events(self, events: Sequence[Event], request_id: str | None) -> None:
        ts = self._clock.stamp(time.time())
        lines = "".join(_JSON.encode(_event_line(ts, e, request_id)) + "\n" for e in events)
        with self._lock:
            self._stream.write(lines)


def _event_line(ts: str, e: Event, request_id: str | None) -> dict[str, Any]:
    return {
        "ts": ts, "level": "info", "logger": "studiolo.event", "msg": "event", "seq": e.seq,
        "project_id": e.project_id, "kind": e.kind, "actor": e.actor, "subject": e.subject,
        "request_id": request_id,
    }  # fmt: skip


class JsonLines(logging.Formatter):
    """A `logging` record as one JSON line: time, level, logger, message, extra fields."""

    def __init__(self) -> None:
        super().__init__()
        self._clock = _Clock()

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": self._clock.stamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(getattr(record, _FIELDS, {}))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return _JSON.encode(line)


def to_stream(stream: IO[str] | None = None, level: int = logging.INFO) -> logging.Handler:
    """Send the `studiolo` loggers to `stream` (stderr) as JSON lines, and only there (not
    also to the root logger's handlers: FastMCP installs Rich's); the handler, for `detach`."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger("studiolo")
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
    return handler


def detach(handler: logging.Handler) -> None:
    root = logging.getLogger("studiolo")
    root.removeHandler(handler)
    root.setLevel(logging.NOTSET)
    root.propagate = True
