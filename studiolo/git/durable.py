"""Writes that survive a power cut in the order the protocol needs (docs/git.md, "The
protocol and its recovery"): a pack and its index are on disk, and so is the directory
entry naming them, before any ref names what they hold. A ref moves by git's own lock file
(`<ref>.lock`, created exclusively: git's writers and ours exclude each other), compared
under it with the value the mover read, and renamed over the ref. The ref itself is not
fsynced: one lost in a crash is at a value it held before, naming objects already on
disk, and the next pass publishes again to the same ids."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["RefLocked", "fsync_dir", "move_ref", "write_durably"]


class RefLocked(Exception):
    """The ref's lock file exists (another writer holds it), or the ref is not at the value read."""


def fsync_dir(path: Path) -> None:
    """Make the entries of `path` (files created, renamed or removed in it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes) -> None:
    """`data` as the file `path` (new or replaced), fsynced; its directory is the caller's."""
    with path.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def move_ref(gitdir: Path, ref: str, current: Callable[[], str | None], old: str | None, new: str) -> None:
    """Point the loose ref `ref` at `new` if, once its lock is held, `current()` (the ref's
    value, loose or packed; None: absent) is `old`."""
    path = gitdir / ref
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise RefLocked(f"{ref} is locked by another writer ({lock.name} exists)") from None
    try:
        found = current()
        if found != old:
            raise RefLocked(f"{ref} is at {found}, not {old}")
        os.write(fd, new.encode() + b"\n")
    except BaseException:
        os.close(fd)
        lock.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(lock, path)
