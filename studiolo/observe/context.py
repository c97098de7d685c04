"""The request id of the work in progress: set by the HTTP face for each request, read by
the door when it appends an audit event and by the logs. Stdlib only: the door imports it."""

from __future__ import annotations

import os
from contextvars import ContextVar

__all__ = ["REQUEST_ID", "new_request_id"]

REQUEST_ID: ContextVar[str | None] = ContextVar("studiolo_request_id", default=None)


def new_request_id() -> str:
    """16 random hex digits: unguessable enough to never collide, short enough to grep."""
    return os.urandom(8).hex()
