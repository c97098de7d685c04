"""What a verifier is asked to check and the exact tree it checks: built by the door
(`studiolo.service.verification`), sent over HTTP as is, read by the verifier
(`studiolo.verifier`). One model each, on both sides of the wire.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from studiolo.core.enums import FileMode

__all__ = ["CandidateTree", "TreeEntry", "VerificationItem"]


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class VerificationItem(_Value):
    """One unit of verification work: a criterion to check on a candidate's exact bytes."""

    project_id: str
    task_id: str
    attempt_id: str
    candidate_id: str
    contract_hash: str
    criterion: str
    checker: str
    checker_kind: str
    checker_config: dict[str, Any]
    candidate_digest: str
    dependency_digest: str
    files: dict[str, str | None]
    bases: dict[str, int]
    file_deps: dict[str, int]
    collection_deps: dict[str, int]
    issuer: str  # the verifier principal this item was listed for (the receipt's `issuer`)
    # written path → mode, executable paths only; left out when empty, so a verifier from
    # before modes still reads an all-regular candidate (and refuses an executable one)
    modes: dict[str, FileMode] = Field(default_factory=dict, exclude_if=lambda v: not v)


class TreeEntry(_Value):
    path: str
    digest: str
    revision: int | None  # None: a candidate file, not published yet
    # "current", "declared" (a file dependency at its declared revision), "candidate"
    source: Literal["current", "declared", "candidate"]
    mode: FileMode = Field(default=FileMode.REGULAR, exclude_if=lambda v: v == FileMode.REGULAR)


class CandidateTree(_Value):
    """Exactly what a verifier materializes for a candidate, read in one transaction.

    Every current file of the project, with each declared file dependency at its declared
    revision and the candidate's files on top. `unreproducible` names declared
    dependencies whose declared state the ledger cannot show (a collection that moved
    since, a file revision that never existed); `withheld` names paths the caller may not
    read. A verifier checks nothing when either is non-empty.
    """

    candidate_id: str
    candidate_digest: str
    dependency_digest: str
    entries: tuple[TreeEntry, ...]
    unreproducible: tuple[str, ...]
    withheld: tuple[str, ...]
