"""Identifiers and bearer tokens: the injected id source, its random default, the token
hash the ledger stores, and the shape check every id from a caller passes."""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Protocol

from studiolo._exceptions import InvalidRequest

__all__ = ["IdSource", "RandomIds", "check_id", "hash_token"]

_ID_RE = re.compile(r"^[a-z]{2,4}_[A-Za-z0-9_-]{6,60}$")


class IdSource(Protocol):
    def new(self, prefix: str) -> str: ...

    def token(self) -> str: ...


class RandomIds:
    """Random, never-reused identifiers (128 bits) and bearer tokens (256 bits)."""

    def new(self, prefix: str) -> str:
        return f"{prefix}_{secrets.token_hex(16)}"

    def token(self) -> str:
        return "stl_" + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What the ledger stores of a bearer token: its SHA-256."""
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_id(value: object, what: str) -> str:
    """`value` if it has the shape of an id (prefix_random); else `InvalidRequest`."""
    if not isinstance(value, str) or not _ID_RE.match(value):
        raise InvalidRequest(f"malformed {what}: {str(value)[:80]!r}")
    return value
