"""What a push means (docs/git.md, "Writing through git"), said through the door.

`refs/for/<task-or-attempt>`: the pushed commit becomes a candidate of the pusher's current
attempt; its write set is the diff against the commit's parent, which must be a published
commit; the target bases and the declared reads are the ledger's revisions whose bytes the
parent holds (a path that changed since the parent is refused now, as the completion would
be). `refs/heads/main`: a direct edit, all paths or none, only if the commit fast-forwards
from the published head. Nothing here moves a ref of the projection: the ledger is the
authority, and the branch moves only when the projector publishes what the ledger
committed."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pygit2
from pygit2.enums import FileMode as GitMode

from studiolo._exceptions import StudioloError
from studiolo.core.canonical import digest_bytes
from studiolo.core.model import Artifact, FileMode, Principal
from studiolo.core.paths import normalize_path, normalize_prefix
from studiolo.git.message import version_of
from studiolo.git.repository import BRANCH
from studiolo.service import CandidateDraft, Coordinator

__all__ = ["FOR", "Receiver", "Refused", "Update", "parse_updates"]

FOR = "refs/for/"
ZERO = "0" * 40
_HEX = re.compile(r"^[0-9a-f]{40}$")
_MODES = {GitMode.BLOB: FileMode.REGULAR, GitMode.BLOB_EXECUTABLE: FileMode.EXECUTABLE}
_READ_TRAILER = re.compile(r"^Studiolo-Read(-Collection)?:\s*(\S.*?)\s*$", re.MULTILINE)


class Refused(Exception):
    """A push the service will not take; the message is what the pusher reads."""


@dataclass(frozen=True)
class Update:
    old: str
    new: str
    ref: str


def parse_updates(text: str) -> list[Update]:
    """The pre-receive hook's input: `old new ref` lines."""
    out = []
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) != 3 or not _HEX.match(parts[0]) or not _HEX.match(parts[1]):
            raise Refused(f"unreadable ref update {line[:120]!r}")
        out.append(Update(*parts))
    return out


Entry = tuple[pygit2.Oid, FileMode]


def _changed(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree | None
) -> dict[str, Entry | None]:
    """path → (blob, mode), or None for a delete: what differs between two trees. Only
    subtrees whose ids differ are read. Refuses what Studiolo cannot hold."""
    out: dict[str, Entry | None] = {}
    _diff(repo, old, new, "", out)
    return out


def _name(entry: pygit2.Object, prefix: str) -> str:
    raw = entry.raw_name or b""
    try:
        path = prefix + raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{prefix}{raw!r} is not UTF-8: Studiolo paths are text") from None
    try:
        norm = normalize_path(path)
    except StudioloError as exc:
        raise Refused(f"{path!r}: {exc.detail}") from None
    if norm != path:
        raise Refused(f"{path!r} is not a normalized path (NFC, no '.' segments); it would be {norm!r}")
    return path


def _diff(
    repo: pygit2.Repository,
    old: pygit2.Tree | None,
    new: pygit2.Tree | None,
    prefix: str,
    out: dict[str, Entry | None],
) -> None:
    before = {e.raw_name or b"": e for e in old} if old is not None else {}
    after = {e.raw_name or b"": e for e in new} if new is not None else {}
    for raw in sorted(set(before) | set(after)):
        was, now = before.get(raw), after.get(raw)
        if was is not None and now is not None and was.id == now.id and was.filemode == now.filemode:
            continue
        sample = now if now is not None else was
        assert sample is not None
        path = _name(sample, prefix)
        old_tree = _as_tree(repo, was)
        new_tree = _as_tree(repo, now)
        if old_tree is not None or new_tree is not None:
            _diff(repo, old_tree, new_tree, path + "/", out)
        if now is not None and new_tree is None:
            if now.filemode not in _MODES:
                kind = "a symbolic link" if now.filemode == GitMode.LINK else "a submodule"
                raise Refused(f"{path} is {kind}: Studiolo holds regular and executable files only")
            out[path] = (now.id, _MODES[GitMode(now.filemode)])
        elif was is not None and old_tree is None:  # a file gone, or become a directory
            out[path] = None


def _as_tree(repo: pygit2.Repository, entry: pygit2.Object | None) -> pygit2.Tree | None:
    if entry is None or entry.filemode != GitMode.TREE:
        return None
    found = repo[entry.id]
    assert isinstance(found, pygit2.Tree)
    return found


def _blob_at(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> bytes | None:
    """The bytes of a regular or executable file of a tree, or None."""
    try:
        entry = tree[path]
    except KeyError:
        return None
    if entry.filemode not in _MODES:
        return None
    blob = repo[entry.id]
    return blob.data if isinstance(blob, pygit2.Blob) else None


def _under(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> dict[str, str]:
    """path → digest of every file under a prefix of a tree."""
    out: dict[str, str] = {}
    start: pygit2.Tree | None = tree
    if prefix:
        try:
            entry = tree[prefix.rstrip("/")]
        except KeyError:
            return out
        start = _as_tree(repo, entry)
    if start is None:
        return out
    stack: list[tuple[pygit2.Tree, str]] = [(start, prefix)]
    while stack:
        node, at = stack.pop()
        for item in node:
            sub = _as_tree(repo, item)
            if sub is not None:
                stack.append((sub, f"{at}{item.name}/"))
            elif item.filemode in _MODES:
                blob = repo[item.id]
                assert isinstance(blob, pygit2.Blob)
                out[f"{at}{item.name}"] = digest_bytes(blob.data)
    return out


class Receiver:
    """One pusher's push into one project, through the door."""

    def __init__(
        self,
        door: Coordinator,
        caller: Principal,
        project_id: str,
        published: Callable[[], pygit2.Repository],
    ) -> None:
        self.door, self.caller, self.project_id = door, caller, project_id
        self.published = published  # the projection, brought up to date (the projector's pass)

    def receive(self, repo: pygit2.Repository, updates: list[Update], options: list[str]) -> str:
        """What the pusher reads on success; raises `Refused` (or the door's refusal)."""
        if len(updates) != 1:
            raise Refused(f"push one ref at a time (this push names {len(updates)})")
        update = updates[0]
        if update.new == ZERO:
            raise Refused(f"{update.ref}: a push cannot delete; the ledger deletes files, not refs")
        commit = repo.get(update.new)
        if not isinstance(commit, pygit2.Commit):
            raise Refused(f"{update.ref}: {update.new[:12]} is not a commit")
        if update.ref == BRANCH:
            return self._direct_edit(repo, update, commit)
        if update.ref.startswith(FOR) and len(update.ref) > len(FOR):
            return self._candidate(repo, update.ref[len(FOR) :], commit, options)
        raise Refused(
            f"{update.ref}: push to refs/for/<task-or-attempt> to submit a candidate,"
            " or to main (fast-forward only) as a direct edit"
        )

    # refs/for/<task-or-attempt> ------------------------------------------------------
    def _candidate(
        self, repo: pygit2.Repository, target: str, commit: pygit2.Commit, options: list[str]
    ) -> str:
        attempt_id = self._attempt(target)
        if len(commit.parents) != 1:
            raise Refused("the pushed commit must have one parent, a published commit: squash your commits")
        parent = commit.parents[0]
        head = self._require_published(parent.id)
        changes = _changed(repo, parent.tree, commit.tree)
        if not changes:
            raise Refused(f"{str(commit.id)[:12]} changes nothing against its parent")
        files_deps, dir_deps = _declared_reads(commit.message, options)
        ledger = {a.path: a for a in self.door.list_artifacts(self.caller, self.project_id)}
        bases = self._at_parent(repo, parent.tree, ledger, changes)
        named = [p for p in files_deps if p not in changes]
        if not files_deps and not dir_deps:  # the default reads: the unchanged files beside the change
            near = {p.rpartition("/")[0] for p in changes}
            named = [
                p for p in _under(repo, parent.tree, "") if p not in changes and p.rpartition("/")[0] in near
            ]
        deps = self._at_parent(repo, parent.tree, ledger, named)
        collections = {d: self._collection_at_parent(repo, parent.tree, ledger, d) for d in dir_deps}
        files = self._upload(repo, changes)
        modes = {p: e[1] for p, e in changes.items() if e is not None}
        draft = CandidateDraft(files, bases, deps, collections, modes)
        cand = self.door.submit_candidate(self.caller, attempt_id, draft)
        moded = sorted(p for p, e in changes.items() if e is not None and e[1] != _mode_of(ledger.get(p)))
        lines = [
            f"studiolo: candidate {cand.id} of attempt {attempt_id} (task {cand.task_id})",
            f"studiolo: {len(files)} files written against {str(parent.id)[:12]}"
            f" (ledger version {version_of(parent.message)}; published head {str(head)[:12]}),"
            f" {len(deps)} files and {len(collections)} collections declared read",
            "studiolo: verify and complete it as any candidate; main moves when its completion is accepted",
        ]
        if moded:
            lines.append(f"studiolo: modes changed (bound by the candidate digest): {moded[:5]}")
        return "\n".join(lines) + "\n"

    def _attempt(self, target: str) -> str:
        if target.startswith("att_"):
            attempt = self.door.attempt(self.caller, target)
        else:
            current = self.door.task_view(self.caller, target).task.current_attempt_id
            if current is None:
                raise Refused(f"task {target} has no current attempt: claim it first")
            attempt = self.door.attempt(self.caller, current)
        if attempt.principal_id != self.caller.id:
            raise Refused(f"attempt {attempt.id} belongs to another principal: claim the task yourself")
        return attempt.id

    def _require_published(self, parent: pygit2.Oid) -> pygit2.Oid:
        projection = self.published()
        found = projection.references.get(BRANCH)
        if found is None:
            raise Refused("the project has published nothing yet")
        head = found.peel(pygit2.Commit).id
        if parent != head and not (parent in projection.odb and projection.descendant_of(head, parent)):
            raise Refused(
                f"the parent {str(parent)[:12]} is not a published commit of main:"
                " fetch, rebase your change onto origin/main, and push one commit"
            )
        return head

    def _at_parent(
        self, repo: pygit2.Repository, tree: pygit2.Tree, ledger: dict[str, Artifact], paths: Iterable[str]
    ) -> dict[str, int]:
        """Each path's ledger revision, if the ledger still holds the bytes the parent holds;
        a path that changed since is refused now (its completion would be refused)."""
        out: dict[str, int] = {}
        stale = []
        for path in paths:
            data = _blob_at(repo, tree, path)
            art = ledger.get(path)
            now = art.digest if art is not None else None
            if (None if data is None else digest_bytes(data)) != now:
                stale.append(path)
            out[path] = art.revision if art is not None else 0
        if stale:
            raise Refused(
                f"changed in the ledger since your parent commit: {sorted(stale)[:5]};"
                " fetch, rebase onto origin/main (`git pull --rebase`), and push again"
            )
        return out

    def _collection_at_parent(
        self, repo: pygit2.Repository, tree: pygit2.Tree, ledger: dict[str, Artifact], prefix: str
    ) -> int:
        live = {p: a.digest for p, a in ledger.items() if a.digest is not None and p.startswith(prefix)}
        if _under(repo, tree, prefix) != live:
            raise Refused(f"the collection {prefix} changed in the ledger since your parent commit: rebase")
        return self.door.collection_revision(self.caller, self.project_id, prefix)

    def _upload(self, repo: pygit2.Repository, changes: dict[str, Entry | None]) -> dict[str, str | None]:
        limit = self.door.settings.max_blob_bytes
        for path, entry in changes.items():
            if entry is not None and repo.odb.read_header(entry[0])[1] > limit:
                raise Refused(f"{path} is larger than the blob limit ({limit} bytes)")
        files: dict[str, str | None] = {}
        for path, entry in changes.items():
            if entry is None:
                files[path] = None
                continue
            blob = repo[entry[0]]
            assert isinstance(blob, pygit2.Blob)
            files[path] = self.door.put_blob(self.caller, blob.data)
        return files

    # refs/heads/main ------------------------------------------------------------------
    def _direct_edit(self, repo: pygit2.Repository, update: Update, commit: pygit2.Commit) -> str:
        projection = self.published()
        found = projection.references.get(BRANCH)
        head = found.peel(pygit2.Commit).id if found is not None else None
        if head is None or update.old != str(head):
            raise Refused(f"main is at {str(head)[:12]}, not {update.old[:12]}: fetch and rebase, then push")
        if commit.id != head and not repo.descendant_of(commit.id, head):
            raise Refused(
                f"{str(commit.id)[:12]} does not fast-forward from the published head {str(head)[:12]}"
            )
        base = projection[head]
        assert isinstance(base, pygit2.Commit)
        changes = _changed(repo, base.tree, commit.tree)
        if not changes:
            raise Refused("the push changes no file")
        ledger = {a.path: a for a in self.door.list_artifacts(self.caller, self.project_id)}
        bases = self._at_parent(repo, base.tree, ledger, changes)
        files = self._upload(repo, changes)
        edits = {p: (files[p], e[1] if e is not None else FileMode.REGULAR) for p, e in changes.items()}
        title = commit.message.strip().splitlines()[0][:200] if commit.message.strip() else ""
        source = {"commit": str(commit.id), "ref": BRANCH, "title": title}
        edited = self.door.edit_artifacts(self.caller, self.project_id, edits, bases, source)
        return (
            f"studiolo: a direct edit of {len(edits)} paths at ledger version {edited.version}\n"
            "studiolo: main will hold the ledger's own commit of it (the same tree, the service's message"
            " and times): `git pull --rebase` drops yours\n"
        )


def _mode_of(art: Artifact | None) -> FileMode:
    return art.mode if art is not None and art.digest is not None else FileMode.REGULAR


def _declared_reads(message: str, options: list[str]) -> tuple[list[str], list[str]]:
    """The reads a push declares: `-o dep=PATH`, `-o collection-dep=PREFIX`, or the commit's
    `Studiolo-Read:` / `Studiolo-Read-Collection:` trailers."""
    files: list[str] = []
    dirs: list[str] = []
    pairs = [o.partition("=") for o in options]
    pairs += [
        ("collection-dep" if m.group(1) else "dep", "=", m.group(2)) for m in _READ_TRAILER.finditer(message)
    ]
    for key, _, value in pairs:
        try:
            if key == "dep":
                files.append(normalize_path(value))
            elif key == "collection-dep":
                dirs.append(normalize_prefix(value))
            else:
                raise Refused(f"unknown push option {key!r}: dep=PATH or collection-dep=PREFIX")
        except StudioloError as exc:
            raise Refused(f"{key}={value!r}: {exc.detail}") from None
    return files, dirs
