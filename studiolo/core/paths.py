"""The one path normalizer, and scope patterns matched against normalized paths only."""

from __future__ import annotations

import fnmatch
import functools
import unicodedata
from collections.abc import Iterable

from studiolo._exceptions import InvalidPath

__all__ = [
    "MAX_PATH_LENGTH",
    "ancestors",
    "matches",
    "matches_any",
    "normalize_path",
    "normalize_prefix",
]

MAX_PATH_LENGTH = 1024
_MAX_SEGMENT = 255


def normalize_path(raw: str) -> str:
    """Return the canonical spelling of a logical path, or raise InvalidPath.

    NFC, `/` separators, no leading `/`, `.` and empty segments dropped, `..` rejected
    (never resolved), no `.git` segment in any case (a checkout must never write a git
    repository's control files), no NUL or control characters, bounded length.
    """
    if not isinstance(raw, str):
        raise InvalidPath("path must be a string")
    text = unicodedata.normalize("NFC", raw).replace("\\", "/")
    if any(_is_control(ch) for ch in text):
        raise InvalidPath(f"path contains a control character: {raw!r}")
    segments = [seg for seg in text.split("/") if seg not in ("", ".")]
    if ".." in segments:
        raise InvalidPath(f"path contains '..': {raw!r}")
    if not segments:
        raise InvalidPath(f"path is empty: {raw!r}")
    if any(seg.rstrip(". ").casefold() == ".git" for seg in segments):  # `.GIT.` on Windows too
        raise InvalidPath(f"path contains a '.git' segment: {raw!r}")
    if any(len(seg) > _MAX_SEGMENT for seg in segments):
        raise InvalidPath("a path segment is longer than 255 characters")
    path = "/".join(segments)
    if len(path) > MAX_PATH_LENGTH:
        raise InvalidPath(f"path is longer than {MAX_PATH_LENGTH} characters")
    return path


def normalize_prefix(raw: str) -> str:
    """A directory prefix: a normalized path with a trailing `/`, or `` for the root."""
    stripped = raw.strip() if isinstance(raw, str) else raw
    if stripped in ("", "/", "."):
        return ""
    return normalize_path(stripped) + "/"


def ancestors(path: str) -> list[str]:
    """Every directory prefix that contains `path`, root (``) first: `a/b/c` → ``, `a/`, `a/b/`."""
    parts = path.split("/")[:-1]
    return [""] + ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]


@functools.lru_cache(maxsize=4096)
def matches(pattern: str, path: str) -> bool:
    """Scope pattern match on normalized paths: `**` spans segments, `*`/`?` stay in one.
    Remembered: one completion asks the same question of its scope and of each grant."""
    pat = [seg for seg in pattern.split("/") if seg not in ("", ".")]
    return _match(pat, path.split("/"))


def matches_any(patterns: Iterable[str], path: str) -> bool:
    return any(matches(p, path) for p in patterns)


def _match(pat: list[str], segs: list[str]) -> bool:
    if not pat:
        return not segs
    head, rest = pat[0], pat[1:]
    if head == "**":
        return any(_match(rest, segs[i:]) for i in range(len(segs) + 1))
    if not segs:
        return False
    return fnmatch.fnmatchcase(segs[0], head) and _match(rest, segs[1:])


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf") and ch not in ("\u200d",)
