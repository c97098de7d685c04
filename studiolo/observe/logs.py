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

__all__ = ["EVENTS", "REQUESTS", "JsonLines", "log_events", "log_request", "to_stream"]

REQUESTS = logging.getLogger("studiolo.request")
EVENTS = logging.getLogger("studiolo.event")
_FIELDS = "studiolo_fields"  # the record attribute that holds a line's fields


class JsonLines(logging.Formatter):
    """A record as one JSON line: time, level, logger, message and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(getattr(record, _FIELDS, {}))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, separators=(",", ":"), default=str)


def to_stream(stream: IO[str] | None = None, level: int = logging.INFO) -> logging.Handler:
    """Send the `studiolo` loggers to `stream` (stderr) as JSON lines; the handler, to remove."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger("studiolo")
    root.addHandler(handler)
    root.setLevel(level)
    return handler


def log_request(
    request_id: str, method: str, route: str, status: int, seconds: float, principal: str | None
) -> None:
    if REQUESTS.isEnabledFor(logging.INFO):
        fields = {
            "request_id": request_id, "method": method, "route": route, "status": status,
            "duration_ms": round(seconds * 1000, 3), "principal": principal,
        }  # fmt: skip
        REQUESTS.info("request", extra={_FIELDS: fields})


def log_events(events: Sequence[Event]) -> None:
    if not EVENTS.isEnabledFor(logging.INFO):
        return
    request_id = REQUEST_ID.get()
    for e in events:
        fields = {
            "seq": e.seq, "project_id": e.project_id, "kind": e.kind, "actor": e.actor,
            "subject": e.subject, "request_id": request_id,
        }  # fmt: skip
        EVENTS.info("event", extra={_FIELDS: fields})
