"""A repository's history as workload data (docs/evaluation.md): the first-parent commits of
a window, each as the files it changed (bytes before and after), the tree before the window,
the later commits that touch a path, and git's own three-way file merge.

Everything is read once into plain values: the evaluation never holds a repository open."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileMode as GitMode

from studiolo.git.source import open_source

__all__ = ["HistoryCommit", "HistoryWindow", "merge_file", "read_window"]


@dataclass(frozen=True)
class HistoryCommit:
    """One first-parent commit: what it changed against its first parent."""

    commit: str
    parent: str
    title: str
    before: Mapping[str, bytes | None]  # path → bytes at the parent (None: absent)
    after: Mapping[str, bytes | None]  # path → bytes at the commit (None: deleted)


@dataclass(frozen=True)
class HistoryWindow:
    base: str  # the commit the window starts from (the parent of the first)
    base_files: Mapping[str, bytes]  # its tree: regular and executable files only
    commits: tuple[HistoryCommit, ...]  # oldest first
    later: tuple[HistoryCommit, ...]  # the first-parent commits after the window, oldest first


def read_window(location: str, until: str, count: int, later: int = 40) -> HistoryWindow:
    """The `count` first-parent commits ending at `until`, and up to `later` after it (on the
    first-parent line of HEAD) — a work tree, a bare repository or a bundle."""
    with open_source(location) as repo:
        end = _commit(repo, until)
        line = _first_parent_line(repo, end, count)
        if len(line) < count + 1:
            raise LookupError(f"{until} has fewer than {count} first-parent ancestors")
        base = line[0]
        head = _commit(repo, "HEAD")
        after = _after(repo, head, end, later)
        return HistoryWindow(
            base=str(base.id),
            base_files=_files(repo, base.tree),
            commits=tuple(_change(repo, c) for c in line[1:]),
            later=tuple(_change(repo, c) for c in after),
        )


def _commit(repo: pygit2.Repository, ref: str) -> pygit2.Commit:
    for name in (ref, f"refs/heads/{ref}", f"refs/remotes/origin/{ref}"):
        try:
            found = repo.revparse_single(name).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        if isinstance(found, pygit2.Commit):
            return found
    raise LookupError(f"no commit named {ref!r}")


def _first_parent_line(repo: pygit2.Repository, end: pygit2.Commit, count: int) -> list[pygit2.Commit]:
    line = [end]
    while len(line) <= count and line[-1].parents:
        line.append(line[-1].parents[0])
    return list(reversed(line))


def _after(
    repo: pygit2.Repository, head: pygit2.Commit, end: pygit2.Commit, limit: int
) -> list[pygit2.Commit]:
    line: list[pygit2.Commit] = []
    at = head
    while at.id != end.id and at.parents:
        line.append(at)
        at = at.parents[0]
    if at.id != end.id:
        return []  # `until` is not on HEAD's first-parent line: no later history
    return list(reversed(line))[:limit]


def _change(repo: pygit2.Repository, commit: pygit2.Commit) -> HistoryCommit:
    parent = commit.parents[0]
    diff = repo.diff(parent, commit)
    diff.find_similar()  # a rename is a delete and an add; libgit2 lists both paths
    paths: set[str] = set()
    for delta in diff.deltas:
        paths.update(p for p in (delta.old_file.path, delta.new_file.path) if p)
    return HistoryCommit(
        commit=str(commit.id),
        parent=str(parent.id),
        title=commit.message.splitlines()[0] if commit.message else "",
        before={p: _blob(repo, parent.tree, p) for p in sorted(paths)},
        after={p: _blob(repo, commit.tree, p) for p in sorted(paths)},
    )


def _blob(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> bytes | None:
    try:
        entry = tree[path]
    except KeyError:
        return None
    if entry.filemode not in (GitMode.BLOB, GitMode.BLOB_EXECUTABLE):
        return None
    return bytes(repo[entry.id].data)  # type: ignore[attr-defined]


def _files(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "") -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for entry in tree:
        path = prefix + str(entry.name)
        if entry.filemode == GitMode.TREE:
            sub = repo[entry.id]
            assert isinstance(sub, pygit2.Tree)
            out.update(_files(repo, sub, path + "/"))
        elif entry.filemode in (GitMode.BLOB, GitMode.BLOB_EXECUTABLE):
            out[path] = bytes(repo[entry.id].data)  # type: ignore[attr-defined]
    return out


def merge_file(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> bytes | bool | None:
    """Git's three-way merge of one file: the merged bytes (None: deleted), or False on a
    conflict. `theirs` is a change made from `base`; `ours` is what the file holds now."""
    if ours == base:
        return theirs
    if theirs == base or ours == theirs:
        return ours
    if ours is None or theirs is None:
        return False  # one side deleted what the other changed
    with tempfile.TemporaryDirectory(prefix="studiolo-merge-") as tmp:
        names = []
        for name, data in (("ours", ours), ("base", base or b""), ("theirs", theirs)):
            (Path(tmp) / name).write_bytes(data)
            names.append(str(Path(tmp) / name))
        done = subprocess.run(["git", "merge-file", "-p", "-q", *names], capture_output=True, check=False)
    if done.returncode != 0:
        return False  # > 0: the number of conflicts; < 0: an error
    return done.stdout


def touched(commits: Iterable[HistoryCommit]) -> set[str]:
    """Every path a sequence of commits changes."""
    return {p for c in commits for p in c.after}
