"""Browser sessions: a bearer token exchanged for a random session id kept server-side, in an
HTTP-only, SameSite=Strict cookie; a per-session CSRF token that every POST must echo.

The token is re-authenticated through the door on every request, so revoking it (or the
grants behind it) takes effect on the next page, exactly as for the API."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import Response

from studiolo._exceptions import NotAuthorized, PayloadTooLarge, Unauthenticated
from studiolo.core.model import Principal
from studiolo.service import Coordinator

__all__ = [
    "CSRF_FIELD",
    "SESSION_COOKIE",
    "SIGNIN_COOKIE",
    "Session",
    "Sessions",
    "caller_of",
    "check_csrf",
    "form_of",
    "session_of",
    "set_cookie",
]

SESSION_COOKIE = "studiolo_session"
SIGNIN_COOKIE = "studiolo_signin"  # double-submit CSRF for the sign-in form (no session yet)
CSRF_FIELD = "csrf"
_MAX_FORM_BYTES = 1_000_000


@dataclass(frozen=True)
class Session:
    id: str
    token: str
    csrf: str
    expires: float
    principal_id: str


class Sessions:
    """Server-side sessions in memory: lost on restart (sign in again), bounded per principal.

    A principal's new session beyond `per_principal` ends that principal's oldest one, never
    anyone else's: a global cap let one principal sign in 10,000 times and so sign everyone
    out. The total is bounded by the principals an admin created, times `per_principal`."""

    def __init__(
        self,
        max_age: float = 8 * 3600,
        per_principal: int = 16,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_age = max_age
        self._per_principal = per_principal
        self._clock = clock
        self._lock = threading.Lock()
        self._by_id: dict[str, Session] = {}
        self._of: dict[str, OrderedDict[str, None]] = {}  # principal id → its session ids, oldest first

    def open(self, token: str, principal_id: str) -> Session:
        sid, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        s = Session(sid, token, csrf, self._clock() + self.max_age, principal_id)
        with self._lock:
            self._by_id[s.id] = s
            mine = self._of.setdefault(principal_id, OrderedDict())
            mine[s.id] = None
            while len(mine) > self._per_principal:
                oldest, _ = mine.popitem(last=False)
                self._by_id.pop(oldest, None)
        return s

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            s = self._by_id.get(session_id)
            if s is not None and s.expires <= self._clock():
                self._drop(s)
                return None
            return s

    def close(self, session_id: str | None) -> None:
        with self._lock:
            s = self._by_id.get(session_id or "")
            if s is not None:
                self._drop(s)

    def _drop(self, s: Session) -> None:
        self._by_id.pop(s.id, None)
        mine = self._of.get(s.principal_id)
        if mine is not None:
            mine.pop(s.id, None)
            if not mine:
                del self._of[s.principal_id]


def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int) -> None:
    """HTTP-only, SameSite=Strict, path /ui; Secure when the page is served over https."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def _sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.web_sessions
    return sessions


def session_of(request: Request) -> Session:
    """The request's live session (none: `Unauthenticated`)."""
    session = _sessions(request).get(request.cookies.get(SESSION_COOKIE))
    if session is None:
        raise Unauthenticated("sign in first")
    return session


def caller_of(request: Request, session: Session) -> Principal:
    """The session's principal, its token authenticated again (revoked: the session ends too)."""
    door: Coordinator = request.app.state.coordinator
    try:
        return door.authenticate(session.token)
    except Unauthenticated:
        _sessions(request).close(session.id)  # the token was revoked: end the session too
        raise


async def form_of(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the last value of each), read after the caller is known."""
    body = await request.body()
    if len(body) > _MAX_FORM_BYTES:
        raise PayloadTooLarge("form too large")
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[-1] for k, v in fields.items()}


def check_csrf(expected: str | None, form: dict[str, str]) -> None:
    """Refuse (403) a form whose CSRF token is absent or not the expected one."""
    given = form.get(CSRF_FIELD, "")
    if not expected or not given or not secrets.compare_digest(expected, given):
        raise NotAuthorized("missing or invalid CSRF token: reload the page and try again")
