"""Retention policies, legal holds, tombstones of deleted bytes, and what retention sweeps
found past its period (docs/operations.md, "Retention and deletion")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select, update

from studiolo.core.remote import RemoteState
from studiolo.core.retention import Hold, RetainedKind, RetentionPolicy, Tombstone
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw

__all__ = ["Expired", "RetentionRepo"]

Expired = tuple[str, str, list[str]]  # (subject id, task id, the digests it names)
# The tombstones of bytes a task's candidates name (a task view): one read by the task.
_DELETED_OF_TASK = (
    "SELECT t.project_id, t.digest, t.size, t.paths, t.subject, t.reason, t.deleted_by, t.deleted_at"
    " FROM tombstones t WHERE t.project_id = :p AND EXISTS (SELECT 1 FROM candidates c"
    " WHERE c.task_id = :t AND c.manifest LIKE '%\"' || t.digest || '\"%') ORDER BY t.deleted_at, t.digest"
)
# The tombstones of bytes one candidate names, or of one of some receipts' logs (a receipt read).
_DELETED_OF_CANDIDATE = (
    "SELECT t.project_id, t.digest, t.size, t.paths, t.subject, t.reason, t.deleted_by, t.deleted_at"
    " FROM tombstones t WHERE t.project_id = :p AND (EXISTS (SELECT 1 FROM candidates c"
    " WHERE c.id = :c AND (c.manifest LIKE '%\"' || t.digest || '\"%' OR c.digest = t.digest))"
    " OR EXISTS (SELECT 1 FROM receipts r WHERE r.candidate_id = :c"
    " AND r.body LIKE '%\"' || t.digest || '\"%'))"
    " ORDER BY t.deleted_at, t.digest"
)
_FINAL = [state.value for state in RemoteState if state.final]


class RetentionRepo:
    def __init__(self, conn: Connection) -> None:
        self._c = conn
        self._raw = Raw(conn)

    def deleted_of_task_later(self, project_id: str, task_id: str) -> Callable[[], list[Tombstone]]:
        """The tombstones of bytes the task's candidates name, the read sent now (`Raw.later`)."""
        return self._raw.later_as(_DELETED_OF_TASK, {"p": project_id, "t": task_id}, _tombstone_row)

    def deleted_of_candidate(self, project_id: str, candidate_id: str) -> list[Tombstone]:
        """The tombstones of bytes the candidate or one of its receipts names (a receipt read)."""
        rows = self._raw.all(_DELETED_OF_CANDIDATE, {"p": project_id, "c": candidate_id})
        return [_tombstone_row(r) for r in rows]

    # policies ----------------------------------------------------------------
    def policy(self, project_id: str) -> RetentionPolicy:
        t = s.retention_policies
        row = self._c.execute(select(t).where(t.c.project_id == project_id)).first()
        if row is None:
            return RetentionPolicy()
        return RetentionPolicy(row.candidates, row.verifier_logs, row.delegations, row.audit_detail)

    def set_policy(self, project_id: str, policy: RetentionPolicy, at: float, by: str | None) -> None:
        t = s.retention_policies
        self._c.execute(delete(t).where(t.c.project_id == project_id))
        values = {k.value: policy.period(k) for k in RetainedKind}
        self._c.execute(insert(t).values(project_id=project_id, updated_at=at, updated_by=by, **values))

    def projects_with_policy(self) -> list[str]:
        """Projects whose policy expires anything (the sweep's list)."""
        t = s.retention_policies
        kept = (
            (t.c.candidates.is_not(None))
            | (t.c.verifier_logs.is_not(None))
            | (t.c.delegations.is_not(None))
            | (t.c.audit_detail.is_not(None))
        )
        return [r[0] for r in self._c.execute(select(t.c.project_id).where(kept).order_by(t.c.project_id))]

    # legal holds -------------------------------------------------------------
    def add_hold(self, h: Hold) -> None:
        self._c.execute(
            insert(s.legal_holds).values(
                id=h.id,
                project_id=h.project_id,
                task_id=h.task_id,
                reason=h.reason,
                placed_by=h.placed_by,
                placed_at=h.placed_at,
            )
        )

    def hold(self, hold_id: str) -> Hold | None:
        row = self._c.execute(select(s.legal_holds).where(s.legal_holds.c.id == hold_id)).first()
        return _hold(row) if row else None

    def release_hold(self, hold_id: str, at: float, by: str, reason: str) -> None:
        t = s.legal_holds
        self._c.execute(
            update(t)
            .where(t.c.id == hold_id, t.c.released_at.is_(None))
            .values(released_at=at, released_by=by, release_reason=reason)
        )

    def holds(self, project_id: str, *, live: bool = True) -> list[Hold]:
        t = s.legal_holds
        q = select(t).where(t.c.project_id == project_id)
        if live:
            q = q.where(t.c.released_at.is_(None))
        return [_hold(r) for r in self._c.execute(q.order_by(t.c.placed_at, t.c.id))]

    # tombstones --------------------------------------------------------------
    def add_tombstone(self, stone: Tombstone) -> None:
        """Record deleted bytes; a second deletion of the same bytes in a project keeps the first record."""
        t = s.tombstones
        exists = select(t.c.digest).where(t.c.project_id == stone.project_id, t.c.digest == stone.digest)
        if self._c.execute(exists).first() is not None:
            return
        self._c.execute(
            insert(t).values(
                project_id=stone.project_id,
                digest=stone.digest,
                size=stone.size,
                paths=dumps(list(stone.paths)),
                subject=stone.subject,
                reason=stone.reason,
                deleted_by=stone.deleted_by,
                deleted_at=stone.deleted_at,
            )
        )

    def tombstones(self, project_id: str, digests: Iterable[str]) -> dict[str, Tombstone]:
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        t = s.tombstones
        rows = self._c.execute(select(t).where(t.c.project_id == project_id, t.c.digest.in_(wanted)))
        return {r.digest: _tombstone(r) for r in rows}

    def tombstone_anywhere(self, digest: str) -> Tombstone | None:
        """The earliest tombstone of these bytes in any project (a service admin's read)."""
        t = s.tombstones
        q = select(t).where(t.c.digest == digest).order_by(t.c.deleted_at, t.c.project_id).limit(1)
        row = self._c.execute(q).first()
        return _tombstone(row) if row else None

    def tombstones_of_project(self, project_id: str, limit: int = 1000) -> list[Tombstone]:
        t = s.tombstones
        q = select(t).where(t.c.project_id == project_id).order_by(t.c.deleted_at.desc(), t.c.digest)
        return [_tombstone(r) for r in self._c.execute(q.limit(limit))]

    def deleted_digests(self) -> set[str]:
        """Every digest some project deleted: a restore must not bring them back."""
        return {r[0] for r in self._c.execute(select(s.tombstones.c.digest).distinct())}

    # what a sweep finds -------------------------------------------------------
    def expired_candidates(
        self, project_id: str, before: float, limit: int, held: Sequence[str] = ()
    ) -> list[Expired]:
        """Candidates made before `before` that no completion published and no sweep took yet, of
        tasks not `held`."""
        c = s.candidates
        q = (
            select(c.c.id, c.c.task_id, c.c.manifest)
            .where(
                c.c.project_id == project_id,
                c.c.created_at < before,
                c.c.id.not_in(select(s.completions.c.candidate_id)),
                c.c.id.not_in(self._swept(RetainedKind.CANDIDATES)),
                c.c.task_id.not_in(list(held)),
            )
            .order_by(c.c.created_at, c.c.id)
            .limit(limit)
        )
        out: list[Expired] = []
        for row in self._c.execute(q):
            files = loads(row.manifest)["files"].values()
            out.append((row.id, row.task_id, sorted({d for d in files if d})))
        return out

    def expired_logs(
        self, project_id: str, before: float, limit: int, held: Sequence[str] = ()
    ) -> list[Expired]:
        """Receipts recorded before `before` that name a log no sweep took yet."""
        r, c = s.receipts, s.candidates
        q = (
            select(r.c.id, c.c.task_id, r.c.body)
            .join(c, c.c.id == r.c.candidate_id)
            .where(
                r.c.project_id == project_id,
                r.c.created_at < before,
                r.c.id.not_in(self._swept(RetainedKind.VERIFIER_LOGS)),
                c.c.task_id.not_in(list(held)),
            )
            .order_by(r.c.created_at, r.c.id)
        )
        out: list[Expired] = []
        for row in self._c.execute(q):
            log = loads(row.body).get("log_digest")
            if isinstance(log, str):
                out.append((row.id, row.task_id, [log]))
            if len(out) >= limit:
                break
        return out

    def expired_delegations(
        self, project_id: str, before: float, limit: int, held: Sequence[str] = ()
    ) -> list[Expired]:
        """Delegations that ended (a final state) before `before`, whose evidence no sweep took yet."""
        d = s.a2a_remote_delegations
        q = (
            select(d.c.id, d.c.task_id, d.c.evidence)
            .where(
                d.c.project_id == project_id,
                d.c.updated_at < before,
                d.c.state.in_(_FINAL),
                d.c.id.not_in(self._swept(RetainedKind.DELEGATIONS)),
                d.c.task_id.not_in(list(held)),
            )
            .order_by(d.c.updated_at, d.c.id)
            .limit(limit)
        )
        out: list[Expired] = []
        for row in self._c.execute(q):
            blobs = loads(row.evidence).get("blobs", [])
            out.append((row.id, row.task_id, sorted({b for b in blobs if isinstance(b, str)})))
        return out

    def mark_swept(self, kind: RetainedKind, project_id: str, subjects: Sequence[str], at: float) -> None:
        if subjects:
            rows = [
                {"kind": kind.value, "subject": x, "project_id": project_id, "swept_at": at} for x in subjects
            ]
            self._c.execute(insert(s.retention_swept), rows)

    def swept_count(self, project_id: str) -> dict[str, int]:
        t = s.retention_swept
        q = select(t.c.kind, func.count()).where(t.c.project_id == project_id).group_by(t.c.kind)
        return {k: int(n) for k, n in self._c.execute(q)}

    def still_named(self, digests: Iterable[str]) -> set[str]:
        """Of `digests`, those something not yet swept still names: an artifact revision (of
        any project), a candidate, a receipt's log, a delegation's evidence. Read by digest
        (a substring of the stored JSON: a false match only keeps bytes)."""
        named: set[str] = set()
        for digest in sorted(set(digests)):
            if self._named(digest):
                named.add(digest)
        return named

    def _named(self, digest: str) -> bool:
        pattern = f'%"{digest}"%'
        revs = select(s.artifact_revisions.c.digest).where(s.artifact_revisions.c.digest == digest).limit(1)
        if self._c.execute(revs).first() is not None:
            return True
        for table, column, kind in (
            (s.candidates, s.candidates.c.manifest, RetainedKind.CANDIDATES),
            (s.receipts, s.receipts.c.body, RetainedKind.VERIFIER_LOGS),
            (s.a2a_remote_delegations, s.a2a_remote_delegations.c.evidence, RetainedKind.DELEGATIONS),
        ):
            q = select(table.c.id).where(column.like(pattern), table.c.id.not_in(self._swept(kind))).limit(1)
            if self._c.execute(q).first() is not None:
                return True
        return False

    # what a deletion on request reads -------------------------------------------
    def blob_sizes(self, digests: Iterable[str]) -> dict[str, int]:
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        q = select(s.blobs.c.digest, s.blobs.c.size).where(s.blobs.c.digest.in_(wanted))
        return {d: int(n) for d, n in self._c.execute(q)}

    def projects_naming(self, digest: str) -> set[str]:
        """The projects that hold these bytes: uploaded, published, or in a candidate."""
        refs = select(s.blob_refs.c.project_id).where(s.blob_refs.c.digest == digest)
        revs = select(s.artifact_revisions.c.project_id).where(s.artifact_revisions.c.digest == digest)
        cands = select(s.candidates.c.project_id).where(s.candidates.c.manifest.like(f'%"{digest}"%'))
        return {r[0] for q in (refs, revs, cands) for r in self._c.execute(q.distinct())}

    def tasks_naming(self, project_id: str, digest: str) -> set[str]:
        """The project's tasks one of whose candidates names these bytes."""
        c = s.candidates
        q = select(c.c.task_id).where(c.c.project_id == project_id, c.c.manifest.like(f'%"{digest}"%'))
        return {r[0] for r in self._c.execute(q.distinct())}

    @staticmethod
    def _swept(kind: RetainedKind) -> Any:
        t = s.retention_swept
        return select(t.c.subject).where(t.c.kind == kind.value)


def _hold(row: Row[Any]) -> Hold:
    return Hold(
        row.id,
        row.project_id,
        row.task_id,
        row.reason,
        row.placed_by,
        row.placed_at,
        row.released_at,
        row.released_by,
        row.release_reason,
    )


def _tombstone_row(row: Sequence[Any]) -> Tombstone:
    project_id, digest, size, paths, subject, reason, deleted_by, deleted_at = row
    listed = tuple(str(p) for p in loads(paths))
    return Tombstone(project_id, digest, int(size), listed, subject, reason, deleted_by, float(deleted_at))


def _tombstone(row: Row[Any]) -> Tombstone:
    paths = tuple(str(p) for p in loads(row.paths))
    return Tombstone(
        row.project_id,
        row.digest,
        int(row.size),
        paths,
        row.subject,
        row.reason,
        row.deleted_by,
        row.deleted_at,
    )
