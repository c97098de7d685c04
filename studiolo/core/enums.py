"""The domain's closed vocabularies. Apart from `model.py` (which re-exports them), so that
the wire models and the client use them without building the domain's dataclasses."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Action", "AttemptStatus", "FileMode", "PrincipalKind", "ReceiptResult", "TaskStatus"]


class PrincipalKind(StrEnum):
    AGENT = "agent"
    VERIFIER = "verifier"
    OBSERVER = "observer"
    HUMAN = "human"
    ADMIN = "admin"


class Action(StrEnum):
    READ = "read"
    WRITE = "write"
    CLAIM = "claim"
    COMPLETE = "complete"
    VERIFY = "verify"
    OBSERVE = "observe"
    ADMIN = "admin"
    DELEGATE = "delegate"  # hand the project work over A2A (docs/a2a.md)


class TaskStatus(StrEnum):
    OPEN = "open"
    CLAIMED = "claimed"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class AttemptStatus(StrEnum):
    ACTIVE = "active"
    RELEASED = "released"
    SUPERSEDED = "superseded"
    COMPLETED = "completed"


class ReceiptResult(StrEnum):
    PASS = "pass"
    FAIL = "fail"


class FileMode(StrEnum):
    """An artifact revision's mode: git's 100644 and 100755 (no symlinks, no submodules)."""

    REGULAR = "regular"
    EXECUTABLE = "executable"
