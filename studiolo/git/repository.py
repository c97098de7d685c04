"""One project's bare repository (pygit2, docs/git.md): trees changed along the changed
paths only, commits with the times given, and refs moved by compare-and-swap, never
backwards. Every object written here is a function of its inputs: the same publications
give the same ids."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileMode as GitMode

from studiolo.core.model import FileMode
from studiolo.git.durable import RefLocked, move_ref
from studiolo.git.message import COMMITTER, version_of
from studiolo.git.objects import Batch, Entries, consolidate

__all__ = ["BRANCH", "CHECKPOINTS", "NOTES", "Change", "GitRepo", "PathConflict", "RefMoved"]

BRANCH = "refs/heads/main"
NOTES = "refs/notes/studiolo"
CHECKPOINTS = "refs/studiolo/checkpoints"
_MODES = {FileMode.REGULAR: GitMode.BLOB, FileMode.EXECUTABLE: GitMode.BLOB_EXECUTABLE}
_BLOBS = (GitMode.BLOB, GitMode.BLOB_EXECUTABLE)


class PathConflict(Exception):
    """A path is both a file and a directory: no git tree holds that."""


class RefMoved(Exception):
    """A ref was not where this writer read it: another writer moved it (or it went backwards)."""


@dataclass(frozen=True)
class Change:
    """A path's new blob and mode (None: kept, or regular for a new path); a delete is None."""

    blob: pygit2.Oid
    mode: FileMode | None


def _signature(who: tuple[str, str], at: float) -> pygit2.Signature:
    return pygit2.Signature(who[0], who[1], int(at), 0)


class GitRepo:
    """A bare repository Studiolo owns: its branch, its notes, its checkpoints."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if (path / "HEAD").is_file():
            self.repo = pygit2.Repository(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.repo = pygit2.init_repository(str(path), bare=True, initial_head="main")
        self._batch: Batch | None = None
        self._parents: dict[bytes, bytes | None] = {}  # commit → parent, of the last batch's commits

    # reading -----------------------------------------------------------------
    def clear_stale_locks(self) -> list[str]:
        """Remove the ref lock files a killed writer left (`refs/**.lock`, `packed-refs.lock`):
        git never removes them itself, and a ref whose lock file exists cannot move. Only for a
        caller that holds the repository's publisher lock, so that no live writer owns one."""
        found = [*self.path.joinpath("refs").rglob("*.lock"), self.path / "packed-refs.lock"]
        removed = []
        for lock in found:
            if lock.is_file() and not lock.is_symlink():
                lock.unlink()
                removed.append(lock.relative_to(self.path).as_posix())
        return removed

    def tip(self, ref: str) -> tuple[pygit2.Oid | None, int]:
        """The commit a ref points at and the ledger version its message names (None, 0: no ref)."""
        found = self.repo.references.get(ref)
        if found is None:
            return None, 0
        commit = self.repo[found.target]
        assert isinstance(commit, pygit2.Commit)
        return commit.id, version_of(commit.message)

    def tree_of(self, commit: pygit2.Oid | None) -> pygit2.Oid | None:
        if commit is None:
            return None
        if self._batch is not None:
            return pygit2.Oid(raw=self._batch.tree_of(commit.raw))
        found = self.repo[commit]
        assert isinstance(found, pygit2.Commit)
        return found.tree_id

    def files(self, commit: pygit2.Oid | None) -> dict[str, tuple[bytes, FileMode]]:
        """Every file of a commit's tree: path → (bytes, mode) (tests and `git status`)."""
        out: dict[str, tuple[bytes, FileMode]] = {}
        tree = self.tree_of(commit)
        if tree is not None:
            self._walk(tree, "", out)
        return out

    def _walk(self, tree: pygit2.Oid, prefix: str, out: dict[str, tuple[bytes, FileMode]]) -> None:
        found = self.repo[tree]
        assert isinstance(found, pygit2.Tree)
        for entry in found:
            path = prefix + str(entry.name)
            if entry.filemode == GitMode.TREE:
                self._walk(entry.id, path + "/", out)
            else:
                mode = FileMode.EXECUTABLE if entry.filemode == GitMode.BLOB_EXECUTABLE else FileMode.REGULAR
                blob = self.repo[entry.id]
                assert isinstance(blob, pygit2.Blob)
                out[path] = (blob.data, mode)

    # writing objects ------------------------------------------------------------
    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Objects written inside are made in memory and, on leaving without an error,
        written as one pack (objects.py) before any ref may name them."""
        self._batch = batch = Batch(self.repo)
        self._parents = {}
        try:
            yield
            pack_dir = self.path / "objects" / "pack"
            parents = batch.parents()
            if batch.write(pack_dir) is not None:
                consolidate(self.repo, pack_dir)
            self._parents = parents
        finally:
            self._batch = None

    def blob(self, data: bytes) -> pygit2.Oid:
        if self._batch is not None:
            return pygit2.Oid(raw=self._batch.add(b"blob", data))
        return self.repo.create_blob(data)

    def apply(self, tree: pygit2.Oid | None, changes: Mapping[str, Change | None]) -> pygit2.Oid:
        """The tree after `changes`: only the trees on a changed path are written."""
        if self._batch is not None:
            made = _apply_entries(self._batch, tree.raw if tree is not None else None, changes)
            return pygit2.Oid(raw=made if made is not None else self._batch.tree({}))
        new = self._apply(tree, changes)
        return new if new is not None else self.repo.TreeBuilder().write()

    def _apply(self, tree: pygit2.Oid | None, changes: Mapping[str, Change | None]) -> pygit2.Oid | None:
        builder = self.repo.TreeBuilder(tree) if tree is not None else self.repo.TreeBuilder()
        below: dict[str, dict[str, Change | None]] = {}
        for path, change in sorted(changes.items()):
            name, sep, rest = path.partition("/")
            if sep:
                below.setdefault(name, {})[rest] = change
                continue
            existing = builder.get(name)
            if name in below or (existing is not None and existing.filemode == GitMode.TREE):
                raise PathConflict(f"{path!r} is both a file and a directory")
            if change is None:
                if existing is not None:
                    builder.remove(name)
                continue
            kept = existing.filemode if existing is not None else GitMode.BLOB
            builder.insert(name, change.blob, _MODES[change.mode] if change.mode else kept)
        for name, inner in below.items():
            existing = builder.get(name)
            if existing is not None and existing.filemode in _BLOBS:
                raise PathConflict(f"{name!r} is both a file and a directory")
            sub = self._apply(existing.id if existing is not None else None, inner)
            if sub is not None:
                builder.insert(name, sub, GitMode.TREE)
            elif existing is not None:
                builder.remove(name)
        return builder.write() if len(builder) else None

    def commit(
        self,
        tree: pygit2.Oid,
        parent: pygit2.Oid | None,
        author: tuple[str, str],
        at: float,
        message: str,
    ) -> pygit2.Oid:
        """A commit object (no ref moves): author and committer times are `at`, UTC."""
        if self._batch is not None:
            made = self._batch.commit(
                tree.raw,
                parent.raw if parent is not None else None,
                _signed(author, at),
                _signed(COMMITTER, at),
                message.encode(),
            )
            return pygit2.Oid(raw=made)
        parents = [parent] if parent is not None else []
        return self.repo.create_commit(
            None, _signature(author, at), _signature(COMMITTER, at), message, tree, parents
        )

    # moving refs ----------------------------------------------------------------
    def advance(self, ref: str, old: pygit2.Oid | None, new: pygit2.Oid) -> None:
        """Move `ref` from `old` to `new` by compare-and-swap; `new` must descend from `old`."""
        if old is not None and not self._descends(new, old):
            raise RefMoved(f"{ref}: {new} does not descend from {old}")

        def current() -> str | None:
            found = self.repo.references.get(ref)  # read afresh: the loose file, else packed-refs
            return None if found is None else str(found.target)

        try:  # git's lock file, the value checked under it, fsynced and renamed (durable.py)
            move_ref(self.path, ref, current, None if old is None else str(old), str(new))
        except RefLocked as exc:
            raise RefMoved(f"{ref} moved: {exc}") from exc

    def _descends(self, new: pygit2.Oid, old: pygit2.Oid) -> bool:
        """Whether `new` descends from `old`: along the parents of the commits the last batch
        made, where the chain from `new` reaches `old` through them (a pass's commits: no
        history walk), else as libgit2 finds it (a walk whose cost grows with the history)."""
        at: bytes | None = new.raw
        while at is not None and at in self._parents:
            at = self._parents[at]
            if at == old.raw:
                return True
        return bool(self.repo.descendant_of(new, old))

    def note_tree(self, notes: pygit2.Oid | None, commit: pygit2.Oid, text: str) -> pygit2.Oid:
        """The notes tree with `text` as the note of `commit` (git's 2/38 fan-out)."""
        hexa = str(commit)
        change = Change(self.blob(text.encode()), FileMode.REGULAR)
        return self.apply(self.tree_of(notes), {f"{hexa[:2]}/{hexa[2:]}": change})

    def note(self, commit: pygit2.Oid) -> str | None:
        """The Studiolo note of a commit, if it has one."""
        found = self.repo.references.get(NOTES)
        if found is None:
            return None
        try:
            return str(self.repo.lookup_note(str(commit), NOTES).message)
        except KeyError:
            return None


def _signed(who: tuple[str, str], at: float) -> bytes:
    """A signature line as libgit2 writes it (names are already one line, no angle brackets)."""
    return f"{who[0]} <{who[1]}> {int(at)} +0000".encode()


def _apply_entries(batch: Batch, tree: bytes | None, changes: Mapping[str, Change | None]) -> bytes | None:
    """`GitRepo._apply` on a batch: the same trees, made in memory."""
    entries: Entries = batch.entries(tree) if tree is not None else {}
    below: dict[str, dict[str, Change | None]] = {}
    for path, change in sorted(changes.items()):
        name, sep, rest = path.partition("/")
        if sep:
            below.setdefault(name, {})[rest] = change
            continue
        key = name.encode()
        existing = entries.get(key)
        if name in below or (existing is not None and existing[0] == GitMode.TREE):
            raise PathConflict(f"{path!r} is both a file and a directory")
        if change is None:
            entries.pop(key, None)
            continue
        kept = existing[0] if existing is not None else int(GitMode.BLOB)
        entries[key] = (int(_MODES[change.mode]) if change.mode else kept, change.blob.raw)
    for name, inner in below.items():
        key = name.encode()
        existing = entries.get(key)
        if existing is not None and existing[0] in _BLOBS:
            raise PathConflict(f"{name!r} is both a file and a directory")
        sub = _apply_entries(batch, existing[1] if existing is not None else None, inner)
        if sub is not None:
            entries[key] = (int(GitMode.TREE), sub)
        elif existing is not None:
            del entries[key]
    return batch.tree(entries, tree) if entries else None
