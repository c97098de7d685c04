"""Writing what a server names, strictly inside a local directory.

The server is input, not authority over a client's disk: `confined_path` accepts a
server-sent path only in normal form (no `..`, absolute paths, backslashes or `.git`
segments), and `write_confined` writes it under a root without following a symlink or
writing through an existing link. The CLI's `checkout` and the MCP workspace use both.
"""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import suppress
from pathlib import Path

from studiolo._exceptions import InvalidPath, StudioloError
from studiolo.core.paths import normalize_path
from studiolo.core.reasons import ErrorReason

__all__ = ["UntrustedResponse", "confined_path", "write_confined"]


class UntrustedResponse(StudioloError):
    """The server sent what a client must not act on: bytes that do not match their digest,
    or a path that would leave the local directory being written. Raised by the client only."""

    status = 502
    default_reason = ErrorReason.UNTRUSTED_RESPONSE


def confined_path(raw: object) -> str:
    """A server-sent path that is safe to create under a local directory, else UntrustedResponse.

    It must already be in normal form (so `..`, a leading `/`, `.` or empty segments and
    backslashes are refused, never resolved). Normal form is the server's own rule
    (`core.paths.normalize_path`), which refuses every spelling of `.git` (`is_git_segment`):
    the server never stores a path that its clients refuse.
    """
    if not isinstance(raw, str) or "\\" in raw:
        raise UntrustedResponse(f"the server sent an unsafe path {str(raw)[:200]!r}")
    try:
        norm = normalize_path(raw)
    except InvalidPath as exc:
        raise UntrustedResponse(f"the server sent an unsafe path {raw[:200]!r}: {exc}") from exc
    if norm != raw:
        raise UntrustedResponse(f"the server sent a path not in normal form: {raw[:200]!r}")
    return norm


def write_confined(root: Path, path: str, data: bytes, executable: bool | None = None) -> None:
    """Write `data` at the server-named `path` strictly inside the directory `root`;
    `executable`: give it execute bits where it has read bits (True) or none (False).

    Every parent is entered with O_NOFOLLOW (a symlink anywhere below `root` is refused,
    never followed), and the file is written to a temporary name and renamed over the old
    one, so an existing symlink or hard link is never written through.
    """
    parts = confined_path(path).split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in parts[:-1]:
            child = _enter_dir(fd, name, path)
            os.close(fd)
            fd = child
        _replace_file(fd, parts[-1], data, path, executable)
    finally:
        os.close(fd)


def _enter_dir(parent: int, name: str, path: str) -> int:
    with suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=parent)
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:  # ELOOP (a symlink) or ENOTDIR (a file)
        detail = f"{path}: {name!r} is a symlink or not a directory; not writing through it"
        raise UntrustedResponse(detail) from exc


def _replace_file(parent: int, name: str, data: bytes, path: str, executable: bool | None) -> None:
    try:
        old = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise UntrustedResponse(f"{path} exists and is not a regular file (a symlink?); not replacing it")
    tmp = f".studiolo-{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if old is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(old.st_mode) & 0o777)
            if executable is not None:
                mode = stat.S_IMODE(os.fstat(fh.fileno()).st_mode) & 0o666  # as the umask left it
                os.fchmod(fh.fileno(), mode | (mode & 0o444) >> 2 if executable else mode)
            fh.write(data)
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=parent)
        raise
