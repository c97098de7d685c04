"""Canonical JSON (RFC 8785) and the SHA-256 digests built on it."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

__all__ = ["canonical_json", "digest_bytes", "digest_json", "is_digest"]

_HEX = frozenset("0123456789abcdef")


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (dicts, lists, str, int, bool, None)."""
    return rfc8785.dumps(value)


def digest_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_json(value: Any) -> str:
    return digest_bytes(canonical_json(value))


def is_digest(value: object) -> bool:
    """True for `sha256:` followed by 64 lowercase hex digits."""
    if not isinstance(value, str) or not value.startswith("sha256:"):
        return False
    hexpart = value[7:]
    return len(hexpart) == 64 and set(hexpart) <= _HEX
