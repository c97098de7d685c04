"""The wire form of a refused completion's details (`core.refusal_view`): one object per
failed predicate, beside `failed` in the problem body (docs/api.md, docs/reasons.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ChangeOut", "MovedOut", "RefusalDetailOut"]


class _Out(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built on first use, as in `responses`


class ChangeOut(_Out):
    """A recorded change: when, by whom, and what it was."""

    at: float = Field(description="seconds since the epoch (the ledger's time of the change)")
    by: str | None = Field(description="the principal id who made it (None: the service)")
    by_name: str | None = Field(description="its name, when the caller may discover the principal")
    cause: str = Field(description="`edit`, a completion id, or the audit event's kind")
    seq: int | None = Field(description="the audit event's sequence number, when known")
    note: str = Field(description="e.g. a cancellation's reason")


class MovedOut(_Out):
    """A declared path or `prefix/` collection whose revision is not the one declared."""

    path: str | None = Field(description="None when hidden: outside the caller's read scope")
    collection: bool
    declared: int | None
    current: int | None
    change: ChangeOut | None = Field(description="who made the current revision (files only)")
    hidden: bool = Field(description="true: `note` names it (`a declared dependency you may not read`)")
    note: str


class RefusalDetailOut(_Out):
    """What one failed predicate found, as the caller may see it (docs/reasons.md)."""

    reason: str = Field(description="the predicate's reason code (one of `failed`)")
    facts: dict[str, Any] = Field(description="plain facts: ids, revisions, times, `<role>_name` beside ids")
    items: list[dict[str, Any]] = Field(description="the paths, grants, receipts or criteria it names")
    moved: list[MovedOut] = Field(
        description="declared paths that moved (`dependency_stale`, `target_base_stale`)"
    )
    change: ChangeOut | None = Field(
        description="the change behind it: a cancellation, a reassignment, a migration"
    )
    text: str = Field(description="one sentence for a person")
