"""The agent's working directory, for the stdio server only: `checkout` writes artifacts and
a manifest of the revisions read; `submit_workspace` diffs the directory against it.

No work is lost: `checkout` into a directory overwrites (or removes, for a path the server
deleted) only files that are unchanged since the last checkout there, and refuses, naming
them, when a local file changed (`overwrite` replaces them anyway). Reads through the
`read_artifact` tool are recorded for the session (`record_read`), so `submit_workspace`
declares by default what the agent read, inside the checkout and outside it.

Confinement: every path is written strictly inside the working directory (no `..`,
absolute paths, `.git` segments, or symlinks, through `studiolo.confined.write_confined`),
every blob is checked against its digest, and a symlink found in the directory is never
read. The manifest has the format `studiolo checkout` writes (`.studiolo-checkout.json`).
"""

from __future__ import annotations

import json
import os
import stat
from contextlib import suppress
from pathlib import Path

from pydantic import BaseModel, ValidationError

from studiolo._exceptions import InvalidPath, InvalidRequest
from studiolo.api.requests import CandidateIn
from studiolo.client import is_git_segment
from studiolo.confined import UntrustedResponse, write_confined
from studiolo.core.canonical import digest_bytes
from studiolo.core.enums import FileMode
from studiolo.core.paths import normalize_path
from studiolo.faces.mcp.models import Checkout, WorkspaceCandidate
from studiolo.faces.mcp.port import GitPort, StudioloPort
from studiolo.git import worktree

__all__ = ["MANIFEST", "Workspace"]

MANIFEST = ".studiolo-checkout.json"
_SKIP_DIRS = frozenset({".studiolo", "__pycache__"})


class _Entry(BaseModel):
    revision: int
    digest: str
    mode: FileMode = FileMode.REGULAR  # absent from a manifest written before modes


class _Manifest(BaseModel):
    """What a checkout read (the format `studiolo checkout` writes)."""

    project_id: str
    prefix: str
    collection_revision: int
    files: dict[str, _Entry]


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.reads: dict[str, int] = {}  # path → the current revision read_artifact returned

    def record_read(self, path: str, revision: int) -> None:
        """A read of the current revision through the tools (the latest read of a path wins)."""
        self.reads[path] = revision

    def checkout(
        self, port: StudioloPort, directory: str, prefix: str, overwrite: bool, git: bool = False
    ) -> Checkout:
        rel = self._directory(directory)
        base = self.root / rel if rel else self.root
        if base.resolve() != base:
            raise InvalidPath(f"{rel} leads through a symlink; not writing through it")
        if git:
            return _checkout_git(port, rel, base, prefix)
        collection = port.collection(prefix)  # before the files: a later edit makes it stale, not wrong
        arts = {a.path: a for a in port.artifacts(prefix) if a.digest is not None}
        before = _previous_manifest(base)
        changed = _local_changes(base, before, {p: a.digest for p, a in arts.items() if a.digest})
        if changed and not overwrite:
            raise InvalidRequest(_would_overwrite(rel, changed))
        files: dict[str, _Entry] = {}
        for art in arts.values():
            assert art.digest is not None
            if _local_digest(base, art.path) != art.digest or _local_mode(base, art.path) is not art.mode:
                data = port.get_blob(art.digest)
                if digest_bytes(data) != art.digest:
                    raise UntrustedResponse(f"the bytes of {art.path} do not match {art.digest}")
                write_confined(self.root, _join(rel, art.path), data, art.mode is FileMode.EXECUTABLE)
            files[art.path] = _Entry(revision=art.revision, digest=art.digest, mode=art.mode)
        for gone in set(before) - set(arts):  # the server deleted it since the last checkout
            _remove(base, gone)
        manifest = _Manifest(
            project_id=collection.project_id,
            prefix=collection.prefix,
            collection_revision=collection.revision,
            files=files,
        )
        text = json.dumps(manifest.model_dump(), indent=2, sort_keys=True) + "\n"
        write_confined(self.root, _join(rel, MANIFEST), text.encode())
        return Checkout(
            directory=rel or ".",
            manifest=_join(rel, MANIFEST),
            prefix=collection.prefix,
            collection_revision=collection.revision,
            files={p: f.revision for p, f in files.items()},
            overwritten=sorted(changed),
        )

    def submit(
        self,
        port: StudioloPort,
        attempt_id: str,
        directory: str,
        declare_collection: bool,
        file_deps: dict[str, int],
    ) -> WorkspaceCandidate:
        rel = self._directory(directory)
        base = self.root / rel if rel else self.root
        if base.resolve() != base:
            raise InvalidPath(f"{rel} leads through a symlink; not reading it")
        if worktree.is_git_checkout(base):
            return _submit_git(port, attempt_id, base, declare_collection, file_deps)
        manifest = _read_manifest(base)
        files, bases, modes = _changes(port, manifest.files, _local_files(base))
        if not files:
            raise InvalidRequest(f"nothing changed in {rel or '.'} since the checkout")
        read = {**self.reads, **{p: e.revision for p, e in manifest.files.items()}, **file_deps}
        deps = {p: r for p, r in read.items() if p not in files}
        collections = {manifest.prefix: manifest.collection_revision} if declare_collection else {}
        draft = CandidateIn(
            files=files, bases=bases, file_deps=deps, collection_deps=collections, modes=modes
        )
        cand = port.submit_candidate(attempt_id, draft)
        uploaded = sorted(p for p, d in files.items() if d is not None)
        return WorkspaceCandidate(
            candidate=cand, uploaded=uploaded, deleted=sorted(set(files) - set(uploaded))
        )

    def _directory(self, directory: str) -> str:
        """A directory named by the model: relative, normal, inside the root, no `.git`."""
        if directory in ("", "."):
            return ""
        if "\\" in directory or directory.startswith("/"):
            raise InvalidPath(f"use a relative directory inside {self.root}: {directory[:200]!r}")
        norm = normalize_path(directory)
        if any(is_git_segment(seg) for seg in norm.split("/")):
            raise InvalidPath(f"refusing a .git directory: {directory[:200]!r}")
        return norm


def _git_port(port: StudioloPort) -> GitPort:
    if not isinstance(port, GitPort):
        raise InvalidRequest("a git workspace needs the stdio server (`studiolo mcp`) over the HTTP API")
    return port


def _checkout_git(port: StudioloPort, rel: str, base: Path, prefix: str) -> Checkout:
    """A clone of the published branch (the whole project: `prefix` must be empty)."""
    if prefix:
        raise InvalidRequest("a git checkout holds the whole project: leave prefix empty")
    if base.exists() and any(base.iterdir()):
        raise InvalidRequest(f"{rel or '.'} is not empty: git clones into an empty or new directory")
    try:
        manifest = _git_port(port).checkout_git(base)
    except (RuntimeError, ValueError) as exc:
        raise InvalidRequest(str(exc)) from exc
    files = {p: int(e["revision"]) for p, e in manifest["files"].items()}
    return Checkout(
        directory=rel or ".",
        manifest=_join(rel, f".git/{worktree.MANIFEST}"),
        prefix="",
        collection_revision=0,
        files=files,
        overwritten=[],
    )


def _submit_git(
    port: StudioloPort, attempt_id: str, base: Path, declare_collection: bool, file_deps: dict[str, int]
) -> WorkspaceCandidate:
    """`studiolo submit` on a git work tree: the change against its base commit; reads named
    in `file_deps` (at their base revisions), else the unchanged files beside the change."""
    try:
        cand = _git_port(port).submit_git(
            attempt_id, base, sorted(file_deps), [""] if declare_collection else []
        )
    except (RuntimeError, ValueError) as exc:
        raise InvalidRequest(str(exc)) from exc
    uploaded = sorted(p for p, d in cand.files.items() if d is not None)
    return WorkspaceCandidate(
        candidate=cand, uploaded=uploaded, deleted=sorted(set(cand.files) - set(uploaded))
    )


def _join(rel: str, path: str) -> str:
    return f"{rel}/{path}" if rel else path


def _previous_manifest(base: Path) -> dict[str, _Entry]:
    """The files of the checkout already in `base` (none: nothing was checked out there)."""
    if not (base / MANIFEST).exists():
        return {}
    return _read_manifest(base).files


def _local_changes(base: Path, before: dict[str, _Entry], incoming: dict[str, str]) -> list[str]:
    """Paths a checkout would overwrite or remove although they changed since the last
    checkout (or were never checked out): their local bytes are neither the checked-out
    ones nor the incoming ones."""
    changed = []
    for path in sorted(set(before) | set(incoming)):
        local = _local_digest(base, path)
        if local is None and path not in before:
            continue  # nothing there
        known = before[path].digest if path in before else None
        if local not in (known, incoming.get(path)) or (local is None and path in incoming):
            changed.append(path)
    return changed


def _local_digest(base: Path, path: str) -> str | None:
    """The digest of a regular file at `path` under `base`; None if absent; a symlink or a
    directory there is never read (its "digest" is a marker no server digest equals)."""
    full = base / path
    try:
        info = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(info.st_mode) or full.parent.resolve() != full.parent:
        return "not-a-regular-file"
    return digest_bytes(full.read_bytes())


def _remove(base: Path, path: str) -> None:
    """Remove a checked-out file the server deleted (only a regular file, never through a link)."""
    full = base / path
    with suppress(FileNotFoundError):
        if full.parent.resolve() == full.parent and stat.S_ISREG(os.lstat(full).st_mode):
            full.unlink()


def _would_overwrite(rel: str, changed: list[str]) -> str:
    shown = ", ".join(changed[:20]) + (f" and {len(changed) - 20} more" if len(changed) > 20 else "")
    return (
        f"checkout into {rel or '.'} would overwrite local changes to {shown}: submit them "
        "(submit_workspace), move them away, or call checkout with overwrite=true to discard them"
    )


def _read_manifest(base: Path) -> _Manifest:
    path = base / MANIFEST
    try:
        info = os.lstat(path)
    except FileNotFoundError as exc:
        raise InvalidRequest(f"no checkout in {base}: run checkout first") from exc
    if not stat.S_ISREG(info.st_mode):
        raise InvalidRequest(f"{path} is not a regular file")
    try:
        return _Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise InvalidRequest(f"{path} is not a checkout manifest: run checkout again") from exc


def _changes(
    port: StudioloPort, known: dict[str, _Entry], local: dict[str, tuple[bytes, FileMode]]
) -> tuple[dict[str, str | None], dict[str, int], dict[str, FileMode]]:
    """(files, bases, modes): changed and new files uploaded (new: base 0), removed ones
    deleted, the written files' modes (a changed executable bit alone is a change)."""
    files: dict[str, str | None] = {}
    bases: dict[str, int] = {}
    modes: dict[str, FileMode] = {}
    for path, (data, mode) in local.items():
        entry = known.get(path)
        if entry is not None and entry.digest == digest_bytes(data) and entry.mode is mode:
            continue
        files[path] = port.put_blob(data)
        bases[path] = entry.revision if entry is not None else 0
        modes[path] = mode
    for path, entry in known.items():
        if path not in local:
            files[path], bases[path] = None, entry.revision
    return files, bases, modes


def _local_mode(base: Path, path: str) -> FileMode | None:
    """The mode of a regular file at `path` under `base` (None: absent, or not a regular file)."""
    try:
        info = os.lstat(base / path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return FileMode.EXECUTABLE if info.st_mode & stat.S_IXUSR else FileMode.REGULAR


def _local_files(base: Path) -> dict[str, tuple[bytes, FileMode]]:
    """Regular files under `base` by relative path, with their modes; symlinks, `.git` and
    the manifest skipped."""
    out: dict[str, tuple[bytes, FileMode]] = {}
    for top, dirs, names in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not is_git_segment(d))
        for name in sorted(names):
            full = Path(top, name)
            rel = full.relative_to(base).as_posix()
            info = os.lstat(full)
            if rel == MANIFEST or not stat.S_ISREG(info.st_mode):
                continue
            mode = FileMode.EXECUTABLE if info.st_mode & stat.S_IXUSR else FileMode.REGULAR
            out[rel] = (full.read_bytes(), mode)
    return out
