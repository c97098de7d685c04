"""Ed25519 keys: the service key that signs completion receipts, and signature checks.

The service key lives in the ledger (`meta.service_key`). `studiolo keys rotate` replaces it;
the public halves of replaced keys stay in `meta.service_keys_retired` and in the JWKS, so a
receipt is verified with the key its `kid` names, however old.
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from studiolo._exceptions import InvalidRequest
from studiolo.core.canonical import canonical_json, digest_bytes
from studiolo.core.reasons import ErrorReason

__all__ = [
    "ServiceKey",
    "b64u",
    "b64u_decode",
    "key_id",
    "new_private_key",
    "parse_public_key",
    "public_jwk",
    "public_key_text",
    "sign",
    "verify",
]


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise InvalidRequest("not base64url", reason=ErrorReason.SIGNATURE_INVALID) from exc


def new_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def public_key_text(key: Ed25519PrivateKey) -> str:
    return b64u(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))


def sign(key: Ed25519PrivateKey, body: Any) -> str:
    """Signature over the RFC 8785 canonical form of a JSON value, base64url."""
    return b64u(key.sign(canonical_json(body)))


def verify(public_key: str, body: Any, signature: str) -> bool:
    try:
        raw = b64u_decode(public_key)
        pub = Ed25519PublicKey.from_public_bytes(raw)
        pub.verify(b64u_decode(signature), canonical_json(body))
    except (InvalidSignature, ValueError, InvalidRequest):
        return False
    return True


def parse_public_key(text: str) -> str:
    """Validate an Ed25519 public key (base64url raw 32 bytes) and return it."""
    raw = b64u_decode(text)
    if len(raw) != 32:
        raise InvalidRequest(
            "an Ed25519 public key is 32 bytes, base64url", reason=ErrorReason.INVALID_REQUEST
        )
    Ed25519PublicKey.from_public_bytes(raw)
    return text


def key_id(public: str) -> str:
    """The `kid` of an Ed25519 public key (base64url): 16 hex digits of its SHA-256."""
    return digest_bytes(public.encode())[7:23]


def public_jwk(public: str) -> dict[str, str]:
    """The JWK (RFC 8037) of an Ed25519 public key, with its `kid`."""
    return {"kty": "OKP", "crv": "Ed25519", "x": public, "kid": key_id(public), "use": "sig", "alg": "EdDSA"}


class ServiceKey:
    """The authority's signing key, stored with the ledger."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        self.public = public_key_text(private)
        self.kid = key_id(self.public)

    @classmethod
    def from_text(cls, text: str) -> ServiceKey:
        return cls(Ed25519PrivateKey.from_private_bytes(b64u_decode(text)))

    @classmethod
    def generate(cls) -> ServiceKey:
        return cls(new_private_key())

    def to_text(self) -> str:
        from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

        raw = self._private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return b64u(raw)

    def sign(self, body: Any) -> str:
        return sign(self._private, body)

    def sign_bytes(self, data: bytes) -> bytes:
        """A raw Ed25519 signature (JWS signing input: A2A card and manifest signatures)."""
        return self._private.sign(data)

    def jwk(self) -> dict[str, str]:
        return public_jwk(self.public)
