"""Canonical JSON (RFC 8785) and the SHA-256 digests built on it.

`canonical_json` takes a fast path through the stdlib encoder (`json.dumps` with sorted keys
and compact separators) when the two are known to agree byte for byte: a value made only of
dicts with ASCII string keys, lists and tuples, ASCII strings, ints within ±(2^53 - 1),
finite floats written in fixed point with a fractional part (`_plain_float`), booleans and
null. RFC 8785 then sorts keys by UTF-16 code units, which for ASCII is the order
`sort_keys` gives, and escapes exactly what the stdlib escapes. Anything else (another
float, a non-ASCII string, a big int, a subclass such as an enum member) goes through
`rfc8785`. tests/core/test_canonical.py checks the agreement with Hypothesis.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

__all__ = ["canonical_json", "digest_bytes", "digest_json", "is_digest"]

_HEX = frozenset("0123456789abcdef")
_INT_MAX = 2**53 - 1  # RFC 8785 numbers are IEEE doubles: larger ints are refused
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":")).encode


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (dicts, lists, str, int, bool, None)."""
    if _plain(value):
        return _encode(value).encode("ascii")
    return rfc8785.dumps(value)


def _plain(value: Any) -> bool:
    """True when the stdlib encoder writes exactly the RFC 8785 bytes of `value`."""
    stack = [value]
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind is str:
            if not v.isascii():
                return False
        elif kind is dict:
            for k, item in v.items():
                if type(k) is not str or not k.isascii():
                    return False
                stack.append(item)
        elif kind is list or kind is tuple:
            stack.extend(v)
        elif kind is int:
            if not -_INT_MAX <= v <= _INT_MAX:
                return False
        elif kind is float:
            if not _plain_float(v):
                return False
        elif v is not None and kind is not bool:
            return False
    return True


def _plain_float(value: float) -> bool:
    """A finite float whose `repr` is fixed-point with a fractional part: RFC 8785 writes the
    same shortest round-trip digits (`rfc8785` starts from `repr`) in the same form. Integral
    values (`1.0` → `1`), exponents (`1e-05` → `0.00001`), -0.0, NaN and infinities differ."""
    text = repr(value)
    return "e" not in text and "n" not in text and not text.endswith(".0")


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
