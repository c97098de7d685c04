"""DSSE envelopes of in-toto Statements, signed with the service key (Ed25519) and checked
with a JWKS key: what a git note or a checkpoint carries. Ed25519 is deterministic, so the
same statement signed with the same key is the same envelope, byte for byte."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from studiolo.keys import ServiceKey, b64u_decode

__all__ = ["PAYLOAD_TYPE", "STATEMENT_TYPE", "envelope", "open_envelope", "pae"]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what the signature covers."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def envelope(statement: Mapping[str, Any], key: ServiceKey) -> dict[str, Any]:
    """The statement in a DSSE envelope signed by the service key (`keyid`: the JWKS `kid`)."""
    payload = _json(statement)
    sig = key.sign_bytes(pae(PAYLOAD_TYPE, payload))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": key.kid, "sig": base64.b64encode(sig).decode()}],
    }


def open_envelope(env: Mapping[str, Any], jwks: Mapping[str, Any]) -> dict[str, Any]:
    """The statement of an envelope whose signature a key of the JWKS checks; ValueError if none."""
    if env.get("payloadType") != PAYLOAD_TYPE:
        raise ValueError("not an in-toto payload")
    payload = base64.b64decode(env["payload"], validate=True)
    keys = {
        k.get("kid"): k for k in jwks.get("keys", []) if k.get("kty") == "OKP" and k.get("crv") == "Ed25519"
    }
    for sig in env.get("signatures", []):
        jwk = keys.get(sig.get("keyid"))
        if jwk is None:
            continue
        public = Ed25519PublicKey.from_public_bytes(b64u_decode(jwk["x"]))
        try:
            public.verify(base64.b64decode(sig["sig"], validate=True), pae(PAYLOAD_TYPE, payload))
        except InvalidSignature:
            continue
        statement: dict[str, Any] = json.loads(payload)
        if statement.get("_type") != STATEMENT_TYPE:
            raise ValueError("not an in-toto Statement")
        return statement
    raise ValueError("no signature a key of the JWKS checks")
