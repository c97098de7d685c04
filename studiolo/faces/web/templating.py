"""The Jinja2 environment (templates shipped in the package, autoescaped) and HTML responses
with a strict Content-Security-Policy: scripts and styles only from /ui/static."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse

__all__ = ["HEADERS", "make_environment", "neutral", "render"]

_HERE = Path(__file__).resolve().parent
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",  # `frame-ancestors` for browsers that predate CSP level 2
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _when(epoch: float | None) -> str:
    if epoch is None:
        return ""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(seconds: float) -> str:
    s = int(abs(seconds))
    text = f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m {s % 60:02d}s"
    return text if seconds >= 0 else f"{text} ago"


# Bidirectional controls (embeddings, overrides, isolates, marks): a title holding U+202E
# would display reversed. Every value a template prints is shown with them made visible.
_BIDI = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"))
_BIDI_SHOWN = {c: f"[U+{c:04X}]" for c in _BIDI}


def neutral(value: Any) -> Any:
    """A printed value with its bidirectional control characters shown as `[U+202E]`."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return value.translate(_BIDI_SHOWN)
    return value


def _short(value: str | None, n: int = 12) -> str:
    if not value:
        return ""
    return value if len(value) <= n + 1 else value[:n] + "…"


def make_environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=neutral,
    )
    env.filters["when"] = _when
    env.filters["duration"] = _duration
    env.filters["short"] = _short
    return env


def render(request: Request, name: str, status_code: int = 200, /, **context: Any) -> HTMLResponse:
    env: Environment = request.app.state.web_templates
    html = env.get_template(name).render(request=request, **context)
    return HTMLResponse(html, status_code=status_code, headers=HEADERS)
