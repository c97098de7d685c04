"""`VerifierPort` over the HTTP API, through `studiolo.client.Client`.

Routes used (all under the verifier principal's bearer token):

    GET  /v1/verifications?project_id=P&limit=N        → [VerificationItem]
    GET  /v1/candidates/{c}/tree                        → CandidateTree
    GET  /v1/blobs/{digest}                             → the bytes
    POST /v1/blobs  (raw body)                          → {"digest": …}
    POST /v1/candidates/{c}/receipts {body, signature}  → {"id": …}

Errors arrive as RFC 9457 problem+json; the client raises them as the matching
`StudioloError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from studiolo.api.verification import CandidateTree, VerificationItem
from studiolo.client import Client

__all__ = ["HttpPort"]


class HttpPort:
    def __init__(self, client: Client, project_id: str) -> None:
        self.client = client
        self.project_id = project_id

    @classmethod
    def connect(
        cls,
        base_url: str,
        token: str,
        project_id: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 60.0,
    ) -> HttpPort:
        """Without `project_id`, the token's own project (one request to `/v1/me`)."""
        client = Client(base_url, token, project=project_id, transport=transport, timeout=timeout)
        return cls(client, project_id or client.project_id())

    def work(self, limit: int = 100) -> list[VerificationItem]:
        return self.client.verifications(project=self.project_id, limit=limit)

    def tree(self, candidate_id: str) -> CandidateTree:
        return self.client.candidate_tree(candidate_id)

    def blob(self, digest: str) -> bytes:
        return self.client.get_blob(digest)

    def put_blob(self, data: bytes) -> str:
        return self.client.put_blob(data).digest

    def post_receipt(self, candidate_id: str, body: Mapping[str, Any], signature: str) -> str:
        return self.client.post_receipt(candidate_id, body, signature).id

    def close(self) -> None:
        self.client.close()
