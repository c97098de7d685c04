"""JWS with an explicit `EdDSA` algorithm over RFC 8785 bytes: the Agent Card signature
(A2A v1.0) and Studiolo's artifact-manifest signature use the same construction."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from google.protobuf.json_format import MessageToDict

from studiolo._exceptions import StudioloError
from studiolo.core.canonical import canonical_json
from studiolo.keys import ServiceKey, b64u, b64u_decode

__all__ = ["card_payload", "clean_empty", "sign_detached", "verify_detached"]


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


def verify_detached(protected: str, signature: str, payload: bytes, pinned: Mapping[str, str]) -> str | None:
    """The kid of the pinned Ed25519 key whose JWS (`alg` EdDSA, explicit) over `payload`
    verifies, else None. Only pinned keys count: a `jku`, `jwk` or unknown `kid` is ignored."""
    try:
        header = json.loads(b64u_decode(protected))
        raw_sig = b64u_decode(signature)
    except (ValueError, StudioloError):
        return None
    if not isinstance(header, dict) or header.get("alg") != "EdDSA":
        return None
    kid = header.get("kid")
    if not isinstance(kid, str) or kid not in pinned:
        return None
    signing_input = f"{protected}.{b64u(payload)}".encode("ascii")
    try:
        Ed25519PublicKey.from_public_bytes(b64u_decode(pinned[kid])).verify(raw_sig, signing_input)
    except (InvalidSignature, ValueError, StudioloError):
        return None
    return kid
