"""The source digest: which study source produced a result.

SHA-256 over every file of the ``studiolo.study`` package, sorted by relative
name, except ``results.json``, ``__pycache__`` directories, compiled files and
hidden files.  Editing any study source therefore invalidates a shipped
``results.json``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["RESULTS_NAME", "package_dir", "source_digest", "source_files"]

RESULTS_NAME = "results.json"


def package_dir() -> Path:
    """The directory of the ``studiolo.study`` package."""
    return Path(__file__).resolve().parent


def source_files(root: Path) -> tuple[Path, ...]:
    """The files the digest covers, sorted by their name relative to ``root``."""
    found = (path for path in root.rglob("*") if path.is_file() and _is_source(path.relative_to(root)))
    return tuple(sorted(found, key=lambda path: path.relative_to(root).as_posix()))


def _is_source(relative: Path) -> bool:
    if relative.as_posix() == RESULTS_NAME or relative.suffix == ".pyc":
        return False
    return not any(part == "__pycache__" or part.startswith(".") for part in relative.parts)


def source_digest(root: Path | None = None) -> str:
    """SHA-256 of the study sources under ``root`` (default: this package)."""
    base = root if root is not None else package_dir()
    hasher = hashlib.sha256()
    for path in source_files(base):
        data = path.read_bytes()
        name = path.relative_to(base).as_posix().encode()
        hasher.update(b"%s\0%d\0" % (name, len(data)))
        hasher.update(data)
    return "sha256:" + hasher.hexdigest()
