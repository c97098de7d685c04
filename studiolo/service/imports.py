"""An import: a tree of files (a git commit's, docs/git.md) becomes the project's artifacts
in one audited edit that records where it came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from studiolo._exceptions import Conflict, InvalidRequest, NotAuthorized
from studiolo.core.canonical import digest_json, is_digest
from studiolo.core.model import Action, FileMode, Principal
from studiolo.core.paths import normalize_path
from studiolo.core.reasons import ErrorReason, Reason
from studiolo.service._door import Context
from studiolo.store import Tx

__all__ = ["Edited", "ImportOps", "Imported"]


@dataclass(frozen=True)
class Imported:
    version: int  # the import's commit version (its audit event)
    written: int  # paths added or changed
    deleted: int  # paths the tree does not hold any more
    unchanged: int
    tree_digest: str  # SHA-256 of the canonical {path: [digest, mode]}


@dataclass(frozen=True)
class Edited:
    version: int  # the edit's commit version (its audit event)
    revisions: dict[str, int]  # path → its new revision


def _tree(files: Mapping[str, tuple[str, FileMode]]) -> dict[str, tuple[str, FileMode]]:
    out: dict[str, tuple[str, FileMode]] = {}
    for path, (digest, mode) in files.items():
        norm = normalize_path(path)
        if norm != path:
            raise InvalidRequest(f"{path!r} is not a normalized path (it is {norm!r})")
        if not is_digest(digest):
            raise InvalidRequest(f"malformed digest for {path!r}")
        out[norm] = (digest, FileMode(mode))
    return out


class ImportOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def import_tree(
        self,
        caller: Principal,
        project_id: str,
        files: Mapping[str, tuple[str, FileMode]],
        source: Mapping[str, str],
    ) -> Imported:
        """Make `files` the project's artifacts: write what differs, delete what the tree
        lacks, in one transaction; one `artifacts.imported` event and one publication.
        The caller needs a write grant covering every path written or deleted."""
        tree = _tree(files)
        tree_digest = digest_json({p: [d, m.value] for p, (d, m) in tree.items()})
        origin = {k: str(v)[:200] for k, v in source.items() if k in ("commit", "ref", "repository")}

        def run(tx: Tx) -> Imported:
            self.ctx.require_project(tx, caller, project_id)
            live = {a.path: a for a in tx.content.artifacts(project_id) if a.digest is not None}
            written = {
                p: dm for p, dm in tree.items() if p not in live or (live[p].digest, live[p].mode) != dm
            }
            deleted = sorted(set(live) - set(tree))
            self._require_writes(tx, caller, project_id, [*written, *deleted])
            blobs = sorted({d for d, _ in written.values()})
            absent, unreadable = tx.content.blob_gaps(None if caller.is_service_admin else project_id, blobs)
            if absent or unreadable:
                missing = sorted({*absent, *unreadable})[:5]
                raise InvalidRequest(f"blobs not uploaded: {missing}", reason=ErrorReason.BLOB_MISSING)
            tx.content.add_blob_ref(project_id, blobs)
            revisions = {
                path: tx.content.write_artifact(project_id, path, digest, tx.now, caller.id, "import", mode)
                for path, (digest, mode) in sorted(written.items())
            }
            for path in deleted:
                revisions[path] = tx.content.write_artifact(
                    project_id, path, None, tx.now, caller.id, "import"
                )
            seq = self.ctx.audit(
                tx,
                project_id,
                "artifacts.imported",
                caller,
                origin.get("commit"),
                **origin,
                tree_digest=tree_digest,
                written=sorted(written),
                deleted=deleted,
                revisions=revisions,
            )
            title = f"Import {origin.get('commit', '')[:12]} ({origin.get('ref', 'a tree')})"
            meta = {"title": title, "source_commit": origin.get("commit"), "tree_digest": tree_digest}
            changes = {p: (d, m) for p, (d, m) in tree.items()}
            tx.publications.append(project_id, seq, "import", caller.id, tx.now, changes, meta)
            unchanged = len(tree) - len(written)
            return Imported(seq, len(written), len(deleted), unchanged, tree_digest)

        return self.ctx.write_in(project_id, run)

    def edit_artifacts(
        self,
        caller: Principal,
        project_id: str,
        edits: Mapping[str, tuple[str | None, FileMode]],
        bases: Mapping[str, int],
        source: Mapping[str, str],
    ) -> Edited:
        """A direct edit of several paths at once (a push to the branch, docs/git.md): each
        path (a digest, or None to delete) by compare-and-swap on its revision in `bases`,
        all or none, in one transaction; one `artifacts.edited` event and one publication."""
        if not edits or set(edits) != set(bases):
            raise InvalidRequest("declare a base revision for exactly the paths edited")
        tree = {normalize_path(p): (d, FileMode(m)) for p, (d, m) in edits.items()}
        if set(tree) != set(edits) or any(d is not None and not is_digest(d) for d, _ in tree.values()):
            raise InvalidRequest("edits name normalized paths and well-formed digests")
        origin = {k: str(v)[:200] for k, v in source.items() if k in ("commit", "ref", "title")}

        def run(tx: Tx) -> Edited:
            self.ctx.require_project(tx, caller, project_id)
            self._require_writes(tx, caller, project_id, sorted(tree))
            current = tx.content.revisions(project_id, list(tree))
            moved = sorted(p for p in tree if current[p] != bases[p])
            if moved:
                raise Conflict(f"changed since your base: {moved[:5]}", reason=ErrorReason.REVISION_CONFLICT)
            blobs = sorted({d for d, _ in tree.values() if d is not None})
            absent, unreadable = tx.content.blob_gaps(None if caller.is_service_admin else project_id, blobs)
            if absent or unreadable:
                missing = sorted({*absent, *unreadable})[:5]
                raise InvalidRequest(f"blobs not uploaded: {missing}", reason=ErrorReason.BLOB_MISSING)
            conflicts = tx.content.tree_conflicts(project_id, {p: d for p, (d, _) in tree.items()})
            if conflicts:
                above, below = conflicts[0]  # both readable: the caller may read every path it pushes to
                raise Conflict(
                    f"{above} would be a file and also the directory of {below}", reason=Reason.PATH_CONFLICT
                )
            tx.content.add_blob_ref(project_id, blobs)
            revisions = {
                path: tx.content.write_artifact(project_id, path, digest, tx.now, caller.id, "edit", mode)
                for path, (digest, mode) in sorted(tree.items())
            }
            seq = self.ctx.audit(
                tx,
                project_id,
                "artifacts.edited",
                caller,
                origin.get("commit"),
                **origin,
                revisions=revisions,
            )
            title = origin.get("title") or f"Edit {len(tree)} paths"
            meta = {"title": title, "source_commit": origin.get("commit"), "revisions": revisions}
            changes = {p: (d, FileMode.REGULAR if d is None else m) for p, (d, m) in tree.items()}
            tx.publications.append(project_id, seq, "edit", caller.id, tx.now, changes, meta)
            return Edited(seq, revisions)

        return self.ctx.write_in(project_id, run)

    def _require_writes(self, tx: Tx, caller: Principal, project_id: str, paths: list[str]) -> None:
        if caller.is_service_admin:
            return
        grants = self.ctx.grants(tx, caller, project_id)
        refused = [p for p in paths if not any(g.covers(Action.WRITE, p) for g in grants)]
        if refused:
            raise NotAuthorized(f"{caller.name} holds no live write grant on {refused[:5]}")
