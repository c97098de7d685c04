"""Inside a check: a pytest plugin that reports the session over the runner's channel.

Loaded as `-p studiolo_report_<random hex>` before any conftest or test module is imported. It
takes the channel's fd from `$STUDIOLO_CHANNEL_FD` (and removes the variable), then writes
one JSON line per event: how many tests were collected, each test phase's outcome, and the
session's exit status. No report file exists, so there is no path for a candidate to find
and rewrite; the runner cross-checks these lines with pytest's exit status and its summary.

This runs in the process the candidate's code runs in. Code written against this plugin can
still write to the inherited fd or patch pytest: a pytest verdict is `shared`.
"""

from __future__ import annotations

import json
import os
from typing import Any

_fd: int | None = None


def _send(record: dict[str, Any]) -> None:
    if _fd is not None:
        data = (json.dumps(record) + "\n").encode()
        while data:
            data = data[os.write(_fd, data) :]


def pytest_configure(config: Any) -> None:
    global _fd
    raw = os.environ.pop("STUDIOLO_CHANNEL_FD", None)
    _fd = int(raw) if raw is not None and raw.isdigit() else None


def pytest_collection_finish(session: Any) -> None:
    _send({"collected": len(session.items)})


def pytest_runtest_logreport(report: Any) -> None:
    _send({"test": report.nodeid, "when": report.when, "outcome": report.outcome})


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _send({"finished": int(exitstatus), "collected": int(session.testscollected)})
