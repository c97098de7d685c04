"""Refused completions in plain words: what each failed predicate means, and how to recover.

Both come from the one hint table (`core/hints.py`), whose `recover` sentences are
docs/reasons.md's **Recover:** sentences (a test keeps them equal)."""

from __future__ import annotations

from collections.abc import Mapping

from studiolo.core.hints import HINTS
from studiolo.core.reasons import Reason

__all__ = ["EXPLANATIONS", "explain"]

EXPLANATIONS: Mapping[Reason, tuple[str, str]] = {
    reason: (HINTS[reason].meaning, HINTS[reason].recover or "") for reason in Reason
}


def explain(code: str) -> tuple[str, str]:
    """(what failed, how to recover) for a reason code; an unknown code is shown as is."""
    try:
        return EXPLANATIONS[Reason(code)]
    except ValueError:
        return (code, "")
