"""`VerifierPort` over a `Coordinator` in this process (tests, embedded single-file use)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from studiolo.core.model import Principal
from studiolo.service import Coordinator
from studiolo.service.verification import CandidateTree, VerificationItem

__all__ = ["InProcessPort"]


class InProcessPort:
    def __init__(self, coordinator: Coordinator, caller: Principal, project_id: str) -> None:
        self.coordinator = coordinator
        self.caller = caller
        self.project_id = project_id

    def work(self, limit: int = 100) -> list[VerificationItem]:
        return self.coordinator.verification_queue(self.caller, self.project_id, limit)

    def tree(self, candidate_id: str) -> CandidateTree:
        return self.coordinator.candidate_tree(self.caller, candidate_id)

    def blob(self, digest: str) -> bytes:
        return self.coordinator.get_blob(self.caller, digest)

    def put_blob(self, data: bytes) -> str:
        return self.coordinator.put_blob(self.caller, data)

    def post_receipt(self, candidate_id: str, body: Mapping[str, Any], signature: str) -> str:
        return self.coordinator.submit_receipt(self.caller, candidate_id, body, signature).id
