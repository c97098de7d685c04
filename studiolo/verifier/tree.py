"""Materialize a candidate tree on disk, digest it, and remove it again.

The server says *what* the tree is (`CandidateTree`: every current file of the project,
declared file dependencies at their declared revisions, the candidate's files on top);
this module writes exactly those bytes, checking each blob against its digest, and
refuses any path that is not already in normal form.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from studiolo._exceptions import InvalidPath
from studiolo.api.verification import CandidateTree
from studiolo.core.canonical import digest_bytes
from studiolo.core.enums import FileMode
from studiolo.core.paths import normalize_path

__all__ = [
    "IntegrityError",
    "TreeConflict",
    "TreeTooLarge",
    "materialize",
    "remove_tree",
    "tree_digest",
]


class TreeConflict(Exception):
    """The declared tree cannot exist on a file system (a path is both a file and a directory)."""


class IntegrityError(Exception):
    """Bytes from the service do not match their digest, or a path is not in normal form."""


class TreeTooLarge(Exception):
    """The tree's files add up to more bytes than the verifier materializes. `own`: the
    candidate's files alone do (else the project's files take the room)."""

    def __init__(self, detail: str, *, own: bool) -> None:
        super().__init__(detail)
        self.own = own


def materialize(
    spec: CandidateTree, fetch: Callable[[str], bytes], dest: Path, max_bytes: int | None = None
) -> None:
    """Write every entry of `spec` under `dest` (an empty directory).

    Every blob is fetched and checked, and the tree's total size (each path counted, so one
    blob listed under many paths counts many times) compared with `max_bytes`, before
    anything is written. A blob listed under several paths is written once and hard-linked
    (the sealed tree is read-only), so it takes its size on disk once.
    """
    blobs = _fetch_all(spec, fetch, max_bytes)
    written: dict[tuple[str, FileMode], Path] = {}
    for entry in spec.entries:
        target = dest / _safe(entry.path)
        _mkdirs(dest, target.parent)
        if target.exists() or target.is_symlink():
            raise TreeConflict(f"{entry.path} is both a file and a directory")
        key = (entry.digest, entry.mode)  # a link shares its mode: one per (bytes, mode)
        _write(target, blobs[entry.digest], written.get(key), entry.mode)
        written.setdefault(key, target)


def _write(target: Path, data: bytes, same: Path | None, mode: FileMode) -> None:
    if same is not None:
        try:
            os.link(same, target)
            return
        except OSError:  # too many links, or a file system without them: write a copy
            pass
    target.write_bytes(data)
    if mode is FileMode.EXECUTABLE:
        target.chmod(0o755)


def _fetch_all(spec: CandidateTree, fetch: Callable[[str], bytes], max_bytes: int | None) -> dict[str, bytes]:
    blobs: dict[str, bytes] = {}
    total = 0
    # The candidate's files first: if they alone exceed the cap, that is theirs to answer for.
    for entry in sorted(spec.entries, key=lambda e: e.source != "candidate"):
        _safe(entry.path)
        if entry.digest not in blobs:
            data = fetch(entry.digest)
            if digest_bytes(data) != entry.digest:
                raise IntegrityError(f"{entry.path}: the blob does not match {entry.digest}")
            blobs[entry.digest] = data
        total += len(blobs[entry.digest])
        if max_bytes is not None and total > max_bytes:
            own = entry.source == "candidate"
            whose = "the candidate's files" if own else "the tree's files"
            detail = f"{whose} add up to more than {max_bytes} bytes ({len(spec.entries)} files)"
            raise TreeTooLarge(detail, own=own)
    return blobs


def _safe(path: str) -> str:
    try:
        norm = normalize_path(path)
    except InvalidPath as exc:
        raise IntegrityError(f"the service sent a malformed path {path!r}") from exc
    if norm != path:
        raise IntegrityError(f"the service sent a path not in normal form: {path!r}")
    return norm


def _mkdirs(root: Path, directory: Path) -> None:
    for parent in [*reversed(directory.relative_to(root).parents), directory.relative_to(root)]:
        here = root / parent
        if here.is_file():
            raise TreeConflict(f"{parent.as_posix()} is both a file and a directory")
        here.mkdir(exist_ok=True)


def tree_digest(root: Path) -> str:
    """A digest of everything under `root`: names, kinds, file bytes and executable bits,
    symlink targets."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = Path(dirpath).relative_to(root).as_posix()
        h.update(f"d {rel}\0".encode())
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            h.update(_entry(Path(dirpath, name), f"{rel}/{name}"))
    return "sha256:" + h.hexdigest()


def _entry(path: Path, rel: str) -> bytes:
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        return f"l {rel} {os.readlink(path)}\0".encode()
    if not stat.S_ISREG(st.st_mode):
        return f"o {rel} {stat.S_IFMT(st.st_mode)}\0".encode()
    file_hash = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            file_hash.update(chunk)
    executable = "x" if st.st_mode & 0o111 else "-"
    return f"f {rel} {executable} {file_hash.hexdigest()}\0".encode()


def remove_tree(root: Path) -> None:
    """Remove `root` whatever a checker left behind (read-only directories included)."""
    if not root.exists():
        return
    for dirpath, dirnames, _files in os.walk(root):
        for name in dirnames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, 0o700)
    os.chmod(root, 0o700)
    shutil.rmtree(root)
