"""The size of every bounded field, in one place.

The wire models (`studiolo.api.requests`) declare these as their `max_length`s, and the
door checks the same numbers for a caller that did not come through a wire model (a test,
the study, an in-process face): a value refused on one face is refused on every face, by
the same number. `tests/faces/test_limits.py` holds the two to each other.
"""

from __future__ import annotations

__all__ = [
    "CONTRACT_HASH",
    "CRITERION_ID",
    "DESCRIPTION",
    "EVIDENCE",
    "HANDOFF_NOTES",
    "OBLIGATIONS",
    "REQUEST_ID",
    "SHORT",
    "TEXT",
    "TITLE",
]

SHORT = 300  # an identifier, a name, a digest, a pattern: any short string the API takes
TEXT = 1_000_000  # a long text with no narrower bound of its own (a published policy)
TITLE = 300  # a task's title
DESCRIPTION = 100_000  # a task's description
CRITERION_ID = 100  # a criterion's id within a contract
REQUEST_ID = 200  # a completion request's idempotency key
CONTRACT_HASH = 100  # a contract's sha256 digest as the client cites it
EVIDENCE = 100  # receipts a completion request may cite
HANDOFF_NOTES = 100_000  # a handoff's notes, and each of its obligations
OBLIGATIONS = 200  # obligations in one handoff
