"""`VerifierPort` over the HTTP API, with a plain `httpx.Client` (inject a transport to test).

Routes used (all under the bearer token of the verifier principal):

    GET  /v1/verifications?project_id=P&limit=N   → [VerificationItem JSON]
    GET  /v1/candidates/{c}/tree                   → CandidateTree JSON
    GET  /v1/blobs/{digest}                        → the bytes
    POST /v1/blobs  (raw body)                     → {"digest": …}
    POST /v1/candidates/{c}/receipts {body, signature} → {"id": …}

Errors arrive as RFC 9457 problem+json and are raised as the matching `StudioloError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from studiolo._exceptions import (
    Conflict,
    InvalidRequest,
    NotAuthorized,
    NotFound,
    PayloadTooLarge,
    StudioloError,
    Unauthenticated,
)
from studiolo.service.evidence import CandidateTree, VerificationItem

__all__ = ["HttpPort"]

_BY_STATUS: dict[int, type[StudioloError]] = {
    400: InvalidRequest,
    401: Unauthenticated,
    403: NotAuthorized,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
}


class HttpPort:
    def __init__(self, client: httpx.Client, project_id: str) -> None:
        """`client` carries the base URL and the `Authorization: Bearer …` header."""
        self.client = client
        self.project_id = project_id

    @classmethod
    def connect(cls, base_url: str, token: str, project_id: str, timeout: float = 60.0) -> HttpPort:
        headers = {"Authorization": f"Bearer {token}", "User-Agent": "studiolo-verifier"}
        return cls(httpx.Client(base_url=base_url, headers=headers, timeout=timeout), project_id)

    def work(self, limit: int = 100) -> list[VerificationItem]:
        params: dict[str, str | int] = {"project_id": self.project_id, "limit": limit}
        data = self._json(self.client.get("/v1/verifications", params=params))
        return [VerificationItem.from_json(item) for item in data]

    def tree(self, candidate_id: str) -> CandidateTree:
        return CandidateTree.from_json(
            self._json(self.client.get(f"/v1/candidates/{_seg(candidate_id)}/tree"))
        )

    def blob(self, digest: str) -> bytes:
        return _checked(self.client.get(f"/v1/blobs/{_seg(digest)}")).content

    def put_blob(self, data: bytes) -> str:
        headers = {"Content-Type": "application/octet-stream"}
        digest: str = self._json(self.client.post("/v1/blobs", content=data, headers=headers))["digest"]
        return digest

    def post_receipt(self, candidate_id: str, body: Mapping[str, Any], signature: str) -> str:
        payload = {"body": dict(body), "signature": signature}
        response = self.client.post(f"/v1/candidates/{_seg(candidate_id)}/receipts", json=payload)
        rid: str = self._json(response)["id"]
        return rid

    def close(self) -> None:
        self.client.close()

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        return _checked(response).json()


def _seg(value: str) -> str:
    return quote(value, safe=":")


def _checked(response: httpx.Response) -> httpx.Response:
    if response.is_success:
        return response
    try:
        problem = response.json()
    except ValueError:
        problem = {}
    if not isinstance(problem, dict):
        problem = {}
    reason = problem.get("reason")
    detail = str(problem.get("detail") or response.text[:200] or response.reason_phrase)
    failed = problem.get("failed") or ()
    cls = _BY_STATUS.get(response.status_code, StudioloError)
    error = cls(detail, reason=reason if isinstance(reason, str) else None, failed=failed)
    error.status = response.status_code
    raise error
