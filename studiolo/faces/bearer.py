"""The one parser of a request's bearer token, for every face that reads `Authorization`."""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["bearer_token"]


def bearer_token(scope: Scope) -> str | None:
    """The request's bearer token: its first `Authorization` header, scheme `Bearer` in any
    case, the token stripped; None without one."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None
