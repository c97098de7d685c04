"""Identifiers and bearer tokens: the injected id source, its random default, the token
hash the ledger stores, and the shape check every id from a caller passes."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from typing import Protocol

from studiolo._exceptions import InvalidRequest
from studiolo.core.paths import normalize_path

__all__ = ["IdSource", "RandomIds", "check_id", "check_name", "check_scope", "hash_token"]

_ID_RE = re.compile(r"^[a-z]{2,4}_[A-Za-z0-9_-]{6,60}$")


_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


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


def check_name(value: object, what: str = "name") -> str:
    """`value` if it is a valid name (of a project, principal, organisation…)."""
    if not isinstance(value, str) or not _NAME_RE.match(value):
        raise InvalidRequest(f"invalid {what} {str(value)[:60]!r}: letters, digits, . _ - (≤100)")
    return value


def check_scope(patterns: Iterable[str]) -> tuple[str, ...]:
    """A contract's or grant's path patterns, normalized; at least one."""
    out = []
    for pat in patterns:
        if pat in ("**", "*"):
            out.append(pat)
            continue
        out.append(normalize_path(pat))
    if not out:
        raise InvalidRequest("a scope needs at least one path pattern")
    return tuple(out)
