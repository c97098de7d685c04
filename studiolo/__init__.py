"""Studiolo: a coordination service for AI agents that share one project.

A task is recorded as completed only when its completion contract holds at one atomic
commit. The public surface: `Coordinator` (the one door), `Store`, `Settings`, the error
tree, and the faces under `studiolo.faces`.
"""

from studiolo._exceptions import (
    CompletionRejected,
    Conflict,
    InvalidPath,
    InvalidRequest,
    NotAuthorized,
    NotFound,
    PayloadTooLarge,
    StudioloError,
    Unauthenticated,
)

__version__ = "0.1.0"

__all__ = [
    "CompletionRejected",
    "Conflict",
    "InvalidPath",
    "InvalidRequest",
    "NotAuthorized",
    "NotFound",
    "PayloadTooLarge",
    "StudioloError",
    "Unauthenticated",
    "__version__",
]
