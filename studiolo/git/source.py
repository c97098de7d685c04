"""Reading a git repository to import (docs/git.md, "Import"): the tree at a commit, file by
file, with every entry Studiolo cannot hold listed: symlinks, submodules, paths the
normalizer refuses or spells differently (`..`, `.git` in any case, control characters, not
NFC), two paths that normalize alike, a path that is both a file and a directory, and
files over the blob limit. Bytes are read one file at a time (bounded memory)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from pygit2.enums import FileMode as GitMode

from studiolo._exceptions import InvalidPath
from studiolo.core.model import FileMode
from studiolo.core.paths import ancestors, normalize_path

__all__ = ["SourceEntry", "SourceTree", "open_source", "read_tree"]


@dataclass(frozen=True)
class SourceEntry:
    path: str  # normalized: it is the path as the repository spells it
    blob: pygit2.Oid
    size: int
    mode: FileMode


@dataclass
class SourceTree:
    commit: str
    ref: str
    entries: list[SourceEntry] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path as spelled, why)


@contextmanager
def open_source(location: str) -> Iterator[pygit2.Repository]:
    """A repository (a work tree, a bare repository, or a bundle file, cloned to a temporary
    directory first: libgit2 does not read bundles)."""
    path = Path(location)
    if path.is_file():
        with tempfile.TemporaryDirectory(prefix="studiolo-bundle-") as tmp:
            target = Path(tmp) / "repo.git"
            subprocess.run(
                ["git", "clone", "--quiet", "--bare", "--mirror", str(path), str(target)],
                check=True,
                capture_output=True,
            )
            yield pygit2.Repository(str(target))
        return
    found = pygit2.discover_repository(str(path))
    if found is None:
        raise FileNotFoundError(f"{location} is not a git repository")
    yield pygit2.Repository(found)


def _commit(repo: pygit2.Repository, ref: str) -> pygit2.Commit:
    for name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/remotes/origin/{ref}"):
        try:
            obj = repo.revparse_single(name)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        commit = obj.peel(pygit2.Commit)
        if isinstance(commit, pygit2.Commit):
            return commit
    raise LookupError(f"no commit named {ref!r}")


def read_tree(repo: pygit2.Repository, ref: str, max_file_bytes: int) -> SourceTree:
    """Every file of the tree at `ref`, and every entry refused (with why)."""
    commit = _commit(repo, ref)
    out = SourceTree(str(commit.id), ref)
    seen: dict[str, str] = {}  # normalized path → its spelling in the tree
    _walk(repo, commit.tree, "", out, seen, max_file_bytes)
    _file_and_directory(out)
    return out


def _walk(
    repo: pygit2.Repository,
    tree: pygit2.Tree,
    prefix: str,
    out: SourceTree,
    seen: dict[str, str],
    limit: int,
) -> None:
    for entry in tree:
        spelled = prefix + str(entry.name)
        mode = entry.filemode
        if mode == GitMode.TREE:
            sub = repo[entry.id]
            assert isinstance(sub, pygit2.Tree)
            _walk(repo, sub, spelled + "/", out, seen, limit)
            continue
        why = _refusal(spelled, mode, seen)
        size = 0 if why else repo[entry.id].size  # type: ignore[attr-defined]
        if not why and size > limit:
            why = f"{size} bytes, over the {limit}-byte blob limit"
        if why:
            out.refused.append((spelled, why))
            continue
        seen[spelled] = spelled
        kind = FileMode.EXECUTABLE if mode == GitMode.BLOB_EXECUTABLE else FileMode.REGULAR
        out.entries.append(SourceEntry(spelled, entry.id, size, kind))


def _refusal(spelled: str, mode: int, seen: dict[str, str]) -> str | None:
    if mode == GitMode.LINK:
        return "a symbolic link (Studiolo holds files only)"
    if mode == GitMode.COMMIT:
        return "a submodule (Studiolo holds files only)"
    try:
        norm = normalize_path(spelled)
    except InvalidPath as exc:
        return exc.detail
    if norm != spelled:
        if norm in seen or any(s != spelled and normalize_path(s) == norm for s in seen.values()):
            return f"two spellings of {norm!r}"
        return f"not in normal form (Studiolo would store it as {norm!r})"
    return None


def _file_and_directory(out: SourceTree) -> None:
    """A path that is a file and also a directory after normalization."""
    files = {e.path for e in out.entries}
    directories = {prefix[:-1] for path in files for prefix in ancestors(path)[1:]}
    both = sorted(files & directories)
    out.refused.extend((path, "both a file and a directory") for path in both)
    out.entries = [e for e in out.entries if e.path not in directories]
