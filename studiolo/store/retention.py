"""Retention policies, legal holds, tombstones of deleted bytes, and what retention sweeps
found past its period (docs/operations.md, "Retention and deletion")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from studiolo.core.remote import RemoteState
from studiolo.core.retention import Hold, RetainedKind, RetentionPolicy, Tombstone
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, columns, in_list, in_params

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
_KINDS = tuple(k.value for k in RetainedKind)  # each one a column of retention_policies
_SET_POLICY = (
    f"INSERT INTO retention_policies (project_id, updated_at, updated_by, {', '.join(_KINDS)})"
    f" VALUES (:p, :at, :by, {', '.join(':' + k for k in _KINDS)})"
)
_HOLDS = f"SELECT {columns(s.legal_holds, 'h')} FROM legal_holds h"
_TOMBSTONES = f"SELECT {columns(s.tombstones, 't')} FROM tombstones t"
_ADD_TOMBSTONE = (
    "INSERT INTO tombstones (project_id, digest, size, paths, subject, reason, deleted_by, deleted_at)"
    " VALUES (:p, :d, :size, :paths, :subject, :reason, :by, :at)"
)
_NOT_SWEPT = " NOT IN (SELECT subject FROM retention_swept WHERE kind = :kind)"
_EXPIRED_CANDIDATES = (
    "SELECT id, task_id, manifest FROM candidates WHERE project_id = :p AND created_at < :before"
    " AND id NOT IN (SELECT candidate_id FROM completions) AND id" + _NOT_SWEPT
)
_EXPIRED_LOGS = (
    "SELECT r.id, c.task_id, r.body FROM receipts r JOIN candidates c ON c.id = r.candidate_id"
    " WHERE r.project_id = :p AND r.created_at < :before AND r.id" + _NOT_SWEPT
)
_EXPIRED_DELEGATIONS = (
    "SELECT id, task_id, evidence FROM a2a_remote_delegations WHERE project_id = :p AND updated_at < :before"
    f" AND state IN {in_list('final', len(_FINAL))} AND id" + _NOT_SWEPT
)
# Whether something not yet swept names a digest (`_named`): (table, its JSON column, kind).
_NAMING = (
    ("candidates", "manifest", RetainedKind.CANDIDATES),
    ("receipts", "body", RetainedKind.VERIFIER_LOGS),
    ("a2a_remote_delegations", "evidence", RetainedKind.DELEGATIONS),
)


class RetentionRepo:
    def __init__(self, conn: Connection) -> None:
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
        sql = f"SELECT {', '.join(_KINDS)} FROM retention_policies WHERE project_id = :p"
        row = self._raw.one(sql, {"p": project_id})
        if row is None:
            return RetentionPolicy()
        periods = dict(zip(_KINDS, row, strict=True))
        return RetentionPolicy(
            periods["candidates"], periods["verifier_logs"], periods["delegations"], periods["audit_detail"]
        )

    def set_policy(self, project_id: str, policy: RetentionPolicy, at: float, by: str | None) -> None:
        self._raw.run("DELETE FROM retention_policies WHERE project_id = :p", {"p": project_id})
        values = {k.value: policy.period(k) for k in RetainedKind}
        self._raw.run(_SET_POLICY, {"p": project_id, "at": at, "by": by} | values)

    def projects_with_policy(self) -> list[str]:
        """Projects whose policy expires anything (the sweep's list)."""
        kept = " OR ".join(f"{k} IS NOT NULL" for k in _KINDS)
        sql = f"SELECT project_id FROM retention_policies WHERE {kept} ORDER BY project_id"
        return [r[0] for r in self._raw.all(sql, {})]

    # legal holds -------------------------------------------------------------
    def add_hold(self, h: Hold) -> None:
        self._raw.run(
            "INSERT INTO legal_holds (id, project_id, task_id, reason, placed_by, placed_at)"
            " VALUES (:id, :p, :task, :reason, :by, :at)",
            {
                "id": h.id,
                "p": h.project_id,
                "task": h.task_id,
                "reason": h.reason,
                "by": h.placed_by,
                "at": h.placed_at,
            },
        )

    def hold(self, hold_id: str) -> Hold | None:
        row = self._raw.one(_HOLDS + " WHERE h.id = :id", {"id": hold_id})
        return Hold(*row) if row else None

    def release_hold(self, hold_id: str, at: float, by: str, reason: str) -> None:
        self._raw.run(
            "UPDATE legal_holds SET released_at = :at, released_by = :by, release_reason = :reason"
            " WHERE id = :id AND released_at IS NULL",
            {"id": hold_id, "at": at, "by": by, "reason": reason},
        )

    def holds(self, project_id: str, *, live: bool = True) -> list[Hold]:
        where = " WHERE h.project_id = :p" + (" AND h.released_at IS NULL" if live else "")
        return [
            Hold(*r) for r in self._raw.all(_HOLDS + where + " ORDER BY h.placed_at, h.id", {"p": project_id})
        ]

    # tombstones --------------------------------------------------------------
    def add_tombstone(self, stone: Tombstone) -> None:
        """Record deleted bytes; a second deletion of the same bytes in a project keeps the first record."""
        key = {"p": stone.project_id, "d": stone.digest}
        if (
            self._raw.one("SELECT digest FROM tombstones WHERE project_id = :p AND digest = :d", key)
            is not None
        ):
            return
        values = {
            "size": stone.size,
            "paths": dumps(list(stone.paths)),
            "subject": stone.subject,
            "reason": stone.reason,
            "by": stone.deleted_by,
            "at": stone.deleted_at,
        }
        self._raw.run(_ADD_TOMBSTONE, key | values)

    def tombstones(self, project_id: str, digests: Iterable[str]) -> dict[str, Tombstone]:
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        sql = _TOMBSTONES + " WHERE t.project_id = :p AND t.digest IN " + in_list("d", len(wanted))
        rows = self._raw.all(sql, {"p": project_id} | in_params("d", wanted))
        return {r[1]: _tombstone_row(r) for r in rows}

    def tombstone_anywhere(self, digest: str) -> Tombstone | None:
        """The earliest tombstone of these bytes in any project (a service admin's read)."""
        sql = _TOMBSTONES + " WHERE t.digest = :d ORDER BY t.deleted_at, t.project_id LIMIT 1"
        row = self._raw.one(sql, {"d": digest})
        return _tombstone_row(row) if row else None

    def tombstones_of_project(self, project_id: str, limit: int = 1000) -> list[Tombstone]:
        sql = _TOMBSTONES + " WHERE t.project_id = :p ORDER BY t.deleted_at DESC, t.digest LIMIT :n"
        return [_tombstone_row(r) for r in self._raw.all(sql, {"p": project_id, "n": limit})]

    def deleted_digests(self) -> set[str]:
        """Every digest some project deleted: a restore must not bring them back."""
        return {r[0] for r in self._raw.all("SELECT DISTINCT digest FROM tombstones", {})}

    # what a sweep finds -------------------------------------------------------
    def expired_candidates(
        self, project_id: str, before: float, limit: int, held: Sequence[str] = ()
    ) -> list[Expired]:
        """Candidates made before `before` that no completion published and no sweep took yet, of
        tasks not `held`."""
        sql, params = _unheld(
            _EXPIRED_CANDIDATES, "task_id", project_id, before, RetainedKind.CANDIDATES, held
        )
        out: list[Expired] = []
        for cid, task_id, manifest in self._raw.all(
            sql + " ORDER BY created_at, id LIMIT :n", params | {"n": limit}
        ):
            files = loads(manifest)["files"].values()
            out.append((cid, task_id, sorted({d for d in files if d})))
        return out

    def expired_logs(
        self, project_id: str, before: float, limit: int, held: Sequence[str] = ()
    ) -> list[Expired]:
        """Receipts recorded before `before` that name a log no sweep took yet."""
        sql, params = _unheld(
            _EXPIRED_LOGS, "c.task_id", project_id, before, RetainedKind.VERIFIER_LOGS, held
        )
        out: list[Expired] = []
        for rid, task_id, body in self._raw.all(sql + " ORDER BY r.created_at, r.id", params):
            log = loads(body).get("log_digest")
            if isinstance(log, str):
                out.append((rid, task_id, [log]))
            if len(out) >= limit:
                break
        return out

    def expired_delegations(
        self, project_id: str, before: float, limit: int, held: Sequence[str] = ()
    ) -> list[Expired]:
        """Delegations that ended (a final state) before `before`, whose evidence no sweep took yet."""
        kind = RetainedKind.DELEGATIONS
        sql, params = _unheld(_EXPIRED_DELEGATIONS, "task_id", project_id, before, kind, held)
        params |= in_params("final", _FINAL) | {"n": limit}
        out: list[Expired] = []
        for did, task_id, evidence in self._raw.all(sql + " ORDER BY updated_at, id LIMIT :n", params):
            blobs = loads(evidence).get("blobs", [])
            out.append((did, task_id, sorted({b for b in blobs if isinstance(b, str)})))
        return out

    def mark_swept(self, kind: RetainedKind, project_id: str, subjects: Sequence[str], at: float) -> None:
        sql = "INSERT INTO retention_swept (kind, subject, project_id, swept_at) VALUES (:kind, :x, :p, :at)"
        for x in subjects:
            self._raw.run(sql, {"kind": kind.value, "x": x, "p": project_id, "at": at})

    def swept_count(self, project_id: str) -> dict[str, int]:
        sql = "SELECT kind, count(*) FROM retention_swept WHERE project_id = :p GROUP BY kind"
        return {k: int(n) for k, n in self._raw.all(sql, {"p": project_id})}

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
        params = {"d": digest, "like": f'%"{digest}"%'}
        if (
            self._raw.one("SELECT digest FROM artifact_revisions WHERE digest = :d LIMIT 1", params)
            is not None
        ):
            return True
        for table, column, kind in _NAMING:
            sql = f"SELECT id FROM {table} WHERE {column} LIKE :like AND id{_NOT_SWEPT} LIMIT 1"
            if self._raw.one(sql, params | {"kind": kind.value}) is not None:
                return True
        return False

    # what a deletion on request reads -------------------------------------------
    def blob_sizes(self, digests: Iterable[str]) -> dict[str, int]:
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        sql = "SELECT digest, size FROM blobs WHERE digest IN " + in_list("d", len(wanted))
        return {d: int(n) for d, n in self._raw.all(sql, in_params("d", wanted))}

    def projects_naming(self, digest: str) -> set[str]:
        """The projects that hold these bytes: uploaded, published, or in a candidate."""
        params = {"d": digest, "like": f'%"{digest}"%'}
        reads = (
            "SELECT DISTINCT project_id FROM blob_refs WHERE digest = :d",
            "SELECT DISTINCT project_id FROM artifact_revisions WHERE digest = :d",
            "SELECT DISTINCT project_id FROM candidates WHERE manifest LIKE :like",
        )
        return {r[0] for sql in reads for r in self._raw.all(sql, params)}

    def tasks_naming(self, project_id: str, digest: str) -> set[str]:
        """The project's tasks one of whose candidates names these bytes."""
        sql = "SELECT DISTINCT task_id FROM candidates WHERE project_id = :p AND manifest LIKE :like"
        return {r[0] for r in self._raw.all(sql, {"p": project_id, "like": f'%"{digest}"%'})}


def _unheld(
    sql: str, task: str, project_id: str, before: float, kind: RetainedKind, held: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """An expiry read (`sql`, with `:p`, `:before`, `:kind`) leaving out the `held` tasks."""
    params: dict[str, Any] = {"p": project_id, "before": before, "kind": kind.value}
    if not held:
        return sql, params
    return sql + f" AND {task} NOT IN " + in_list("held", len(held)), params | in_params("held", held)


def _tombstone_row(row: Sequence[Any]) -> Tombstone:
    project_id, digest, size, paths, subject, reason, deleted_by, deleted_at = row
    listed = tuple(str(p) for p in loads(paths))
    return Tombstone(project_id, digest, int(size), listed, subject, reason, deleted_by, float(deleted_at))
