"""The domain's closed vocabularies. Apart from `model.py` (which re-exports them), so that
the wire models and the client use them without building the domain's dataclasses."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "Action",
    "AttemptStatus",
    "FileMode",
    "PrincipalKind",
    "ReceiptResult",
    "TaskStatus",
    "VerdictIsolation",
]


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


class VerdictIsolation(StrEnum):
    """Where a checker kind computes its verdict (docs/verifiers.md, "Can the candidate touch
    the verdict?"). A receipt says which, signed; a criterion may require `separate`."""

    SHARED = "shared"  # in a process the candidate's code runs in (command, pytest): forgeable
    SEPARATE = "separate"  # where no candidate code ever runs (outputs, json-schema, digest-equals)


class FileMode(StrEnum):
    """An artifact revision's mode: git's 100644 and 100755 (no symlinks, no submodules)."""

    REGULAR = "regular"
    EXECUTABLE = "executable"
