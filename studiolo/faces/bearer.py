"""The one parser of a request's bearer token, for every face that reads `Authorization`,
and where a face leaves the caller it authenticated (for the request's log line)."""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["PRINCIPAL_KEY", "bearer_token", "leave_caller"]

PRINCIPAL_KEY = "studiolo_principal"  # the scope state's key: the caller (for the request's log line)


def bearer_token(scope: Scope) -> str | None:
    """The request's bearer token: its first `Authorization` header, scheme `Bearer` in any
    case, the token stripped; None without one."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


def leave_caller(scope: Scope, caller: object) -> None:
    """Leave the authenticated caller in the request's scope state, where the request's log
    line finds it (`observe/http.py`)."""
    scope.setdefault("state", {})[PRINCIPAL_KEY] = caller
