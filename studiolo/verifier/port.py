"""What a verifier needs from the service, as one small protocol with two adapters:
`InProcessPort` (a `Coordinator` in this process) and `HttpPort` (the HTTP API)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from studiolo.api.verification import CandidateTree, VerificationItem

__all__ = ["VerifierPort"]


class VerifierPort(Protocol):
    def work(self, limit: int = 100) -> list[VerificationItem]:
        """Criteria of current candidates this verifier is admitted to check and nobody has."""
        ...

    def tree(self, candidate_id: str) -> CandidateTree:
        """The exact file tree to materialize for a candidate."""
        ...

    def blob(self, digest: str) -> bytes:
        """Immutable bytes by digest (the caller checks the digest)."""
        ...

    def put_blob(self, data: bytes) -> str:
        """Store bytes (a log); return their digest."""
        ...

    def post_receipt(self, candidate_id: str, body: Mapping[str, Any], signature: str) -> str:
        """Post a signed receipt; return its id. Rejections raise `StudioloError`."""
        ...
