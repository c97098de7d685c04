"""The one path normalizer, and scope patterns matched against normalized paths only."""

from __future__ import annotations

import fnmatch
import functools
import re
import unicodedata
from collections.abc import Iterable

from studiolo._exceptions import InvalidPath

__all__ = [
    "MAX_PATH_LENGTH",
    "ancestor_files",
    "ancestors",
    "file_dir_conflicts",
    "is_git_segment",
    "matches",
    "matches_any",
    "normalize_path",
    "normalize_prefix",
]

MAX_PATH_LENGTH = 1024
_MAX_SEGMENT = 255
# Characters that HFS+ ignores in names (as git does when it refuses `.git`): `.g\u200cit`
# names `.git` there.
_IGNORED_IN_NAMES = frozenset(
    "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"
)
_SHORT_NAME = re.compile(r"git~[0-9]+")  # NTFS 8.3 names of `.git`: `GIT~1`, or `GIT~2` if taken


def normalize_path(raw: str) -> str:
    """Return the canonical spelling of a logical path, or raise InvalidPath.

    NFC, `/` separators, no leading `/`, `.` and empty segments dropped, `..` rejected
    (never resolved), no segment that names `.git` on some file system (`is_git_segment`: a
    checkout must never write a git repository's control files), no NUL or control
    characters, bounded length. Clients confine server-sent paths by this same rule.
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
    if any(is_git_segment(seg) for seg in segments):
        raise InvalidPath(f"path contains a '.git' segment: {raw!r}")
    if any(len(seg) > _MAX_SEGMENT for seg in segments):
        raise InvalidPath("a path segment is longer than 255 characters")
    path = "/".join(segments)
    if len(path) > MAX_PATH_LENGTH:
        raise InvalidPath(f"path is longer than {MAX_PATH_LENGTH} characters")
    return path


def is_git_segment(segment: str) -> bool:
    """Whether a path segment names a `.git` directory on some file system: any case,
    trailing dots or spaces (Windows), an NTFS stream suffix (`.git::$INDEX_ALLOCATION`),
    the 8.3 short name (`GIT~1`), HFS+ ignorables (`.g\u200cit`)."""
    folded = "".join(ch for ch in segment if ch not in _IGNORED_IN_NAMES).casefold()
    folded = folded.split(":", 1)[0].rstrip(". ")
    return folded == ".git" or _SHORT_NAME.fullmatch(folded) is not None


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


def ancestor_files(path: str) -> list[str]:
    """The paths that must not be files for `path` to be one: `a/b/c` → `a`, `a/b`."""
    return [prefix[:-1] for prefix in ancestors(path)[1:]]


def file_dir_conflicts(files: Iterable[str]) -> list[tuple[str, str]]:
    """Among the normalized paths of a tree's files, each pair (file, a file under it): a
    path that would be both a file and a directory, so the tree cannot exist on disk."""
    present = set(files)
    return sorted((above, path) for path in present for above in ancestor_files(path) if above in present)


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
