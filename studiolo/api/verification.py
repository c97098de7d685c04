"""What a verifier is asked to check and the exact tree it checks: built by the door
(`studiolo.service.verification`), sent over HTTP, read by the verifier (`studiolo.verifier`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["CandidateTree", "TreeEntry", "VerificationItem"]


@dataclass(frozen=True)
class VerificationItem:
    """One unit of verification work: a criterion to check on a candidate's exact bytes."""

    project_id: str
    task_id: str
    attempt_id: str
    candidate_id: str
    contract_hash: str
    criterion: str
    checker: str
    checker_kind: str
    checker_config: Mapping[str, Any]
    candidate_digest: str
    dependency_digest: str
    files: Mapping[str, str | None]
    bases: Mapping[str, int]
    file_deps: Mapping[str, int]
    collection_deps: Mapping[str, int]
    issuer: str  # the verifier principal this item was listed for (the receipt's `issuer`)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VerificationItem:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class TreeEntry:
    path: str
    digest: str
    revision: int | None  # None: a candidate file, not published yet
    source: str  # "current", "declared" (a file dependency at its declared revision), "candidate"


@dataclass(frozen=True)
class CandidateTree:
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CandidateTree:
        return cls(
            data["candidate_id"],
            data["candidate_digest"],
            data["dependency_digest"],
            tuple(TreeEntry(**e) for e in data["entries"]),
            tuple(data["unreproducible"]),
            tuple(data["withheld"]),
        )
