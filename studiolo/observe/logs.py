"""Structured logs: one JSON object a line, on the `studiolo` loggers.

`studiolo.request`: one line a request (id, method, route template, status, duration, the
caller's principal id when the face knew it). `studiolo.event`: one line a committed state
change (the audit event's seq, project, kind, actor, subject and the request id that caused
it). Neither carries a token, a body, a query string nor an event's data: what could hold a
secret stays out.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from typing import IO, Any

from studiolo.core.model import Event
from studiolo.observe.context import REQUEST_ID

__all__ = ["EVENTS", "REQUESTS", "JsonLines", "detach", "log_events", "log_request", "to_stream"]

REQUESTS = logging.getLogger("studiolo.request")
EVENTS = logging.getLogger("studiolo.event")
_FIELDS = "studiolo_fields"  # the record attribute that holds a line's fields
_JSON = json.JSONEncoder(separators=(",", ":"), default=str)


class JsonLines(logging.Formatter):
    """A record as one JSON line: time, level, logger, message and the record's fields."""

    def __init__(self) -> None:
        super().__init__()
        self._second = (-1, "")  # the last whole second formatted, and its text

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": f"{self._stamp(int(record.created))}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(getattr(record, _FIELDS, {}))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return _JSON.encode(line)

    def _stamp(self, second: int) -> str:
        known, text = self._second
        if known != second:
            text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = (second, text)
        return text


def to_stream(stream: IO[str] | None = None, level: int = logging.INFO) -> logging.Handler:
    """Send the `studiolo` loggers to `stream` (stderr) as JSON lines, and only there; the
    handler, to remove (`detach`)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger("studiolo")
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False  # not also to the root logger's handlers (MCP's FastMCP installs Rich's)
    return handler


def detach(handler: logging.Handler) -> None:
    root = logging.getLogger("studiolo")
    root.removeHandler(handler)
    root.setLevel(logging.NOTSET)
    root.propagate = True


def log_request(
    request_id: str, method: str, route: str, status: int, seconds: float, principal: str | None
) -> None:
    if REQUESTS.isEnabledFor(logging.INFO):
        fields = {
            "request_id": request_id, "method": method, "route": route, "status": status,
            "duration_ms": round(seconds * 1000, 3), "principal": principal,
        }  # fmt: skip
        _emit(REQUESTS, "request", fields)


def log_events(events: Sequence[Event]) -> None:
    if not EVENTS.isEnabledFor(logging.INFO):
        return
    request_id = REQUEST_ID.get()
    for e in events:
        fields = {
            "seq": e.seq, "project_id": e.project_id, "kind": e.kind, "actor": e.actor,
            "subject": e.subject, "request_id": request_id,
        }  # fmt: skip
        _emit(EVENTS, "event", fields)


def _emit(logger: logging.Logger, msg: str, fields: dict[str, Any]) -> None:
    """`logger.info(msg)` with the fields, without the caller lookup `info` makes (a walk up
    the stack for a file and line these lines do not show): a third of a line's cost."""
    record = logger.makeRecord(logger.name, logging.INFO, "", 0, msg, (), None, extra={_FIELDS: fields})
    logger.handle(record)
