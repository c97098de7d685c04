"""JWS with an explicit `EdDSA` algorithm over RFC 8785 bytes: the Agent Card signature
(A2A v1.0) and Studiolo's artifact-manifest signature use the same construction."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.json_format import MessageToDict

from studiolo.core.canonical import canonical_json
from studiolo.keys import ServiceKey, b64u

__all__ = ["card_payload", "clean_empty", "sign_detached"]


def sign_detached(key: ServiceKey, payload: bytes) -> dict[str, str]:
    """`{"protected", "signature"}` of a compact JWS whose payload is `payload` (detached)."""
    header = {"alg": "EdDSA", "kid": key.kid, "typ": "JOSE"}
    protected = b64u(json.dumps(header, separators=(",", ":"), sort_keys=True).encode())
    signing_input = f"{protected}.{b64u(payload)}".encode("ascii")
    return {"protected": protected, "signature": b64u(key.sign_bytes(signing_input))}


def card_payload(card: Any) -> bytes:
    """The bytes an A2A v1.0 card signature covers: the card's JSON without `signatures`,
    empty values removed, in RFC 8785 form (what the SDK's verifier recomputes)."""
    data = MessageToDict(card)
    data.pop("signatures", None)
    return canonical_json(clean_empty(data))


def clean_empty(value: Any) -> Any:
    """Drop empty strings, lists and objects, recursively (A2A's card canonicalization)."""
    if isinstance(value, dict):
        kept = {k: c for k, v in value.items() if (c := clean_empty(v)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [c for v in value if (c := clean_empty(v)) is not None]
        return items or None
    if isinstance(value, str) and not value:
        return None
    return value
