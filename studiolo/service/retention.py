"""Evidence retention, legal holds and deletion of bytes on request (docs/operations.md,
"Retention and deletion"). The rules are `core/retention.py`; this is who may apply them,
in which transaction, and what each leaves in the audit chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from studiolo._exceptions import BytesDeleted, Conflict, InvalidRequest, NotAuthorized, NotFound
from studiolo.core.canonical import digest_json, is_digest
from studiolo.core.model import Action, FileMode, Principal
from studiolo.core.reasons import ErrorReason
from studiolo.core.retention import (
    RETAINED_BY_SWEEP,
    Hold,
    RetainedKind,
    RetentionPolicy,
    Tombstone,
    holding,
)
from studiolo.service._door import Context
from studiolo.service._ids import check_id
from studiolo.store import Tx
from studiolo.store.audit import detail_hash

__all__ = ["RetentionOps", "RetentionStatus", "SweepReport", "deleted_error"]

_MAX_REASON = 2000
_SWEEP_BATCH = 500


@dataclass(frozen=True)
class RetentionStatus:
    """A project's retention: its periods, its live holds, the latest deleted bytes."""

    project_id: str
    policy: RetentionPolicy
    holds: Sequence[Hold]
    deleted: Sequence[Tombstone]
    swept: Mapping[str, int]  # kind → how many of its subjects sweeps took


@dataclass(frozen=True)
class SweepReport:
    """One sweep of one project: subjects taken per kind, bytes deleted, and whether a batch
    was full (sweep again to take the rest)."""

    project_id: str
    swept: Mapping[str, int] = field(default_factory=dict)
    blobs: int = 0
    bytes: int = 0
    more: bool = False


def _reason(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip() or len(reason) > _MAX_REASON:
        raise InvalidRequest(f"a reason is required: 1..{_MAX_REASON} characters")
    return reason.strip()


def deleted_error(stone: Tombstone) -> BytesDeleted:
    """The error every read of deleted bytes answers."""
    return BytesDeleted(f"{stone.digest}: {stone.text()}")


class RetentionOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # reads ---------------------------------------------------------------------
    def retention(self, caller: Principal, project_id: str) -> RetentionStatus:
        """The project's retention periods, live holds and latest deletions (any member)."""

        def run(tx: Tx) -> RetentionStatus:
            self.ctx.require_project(tx, caller, project_id)
            r = tx.retention
            return RetentionStatus(
                project_id,
                r.policy(project_id),
                r.holds(project_id),
                r.tombstones_of_project(project_id, limit=100),
                r.swept_count(project_id),
            )

        return self.ctx.store.read(run)

    # policy ---------------------------------------------------------------------
    def set_retention(
        self, caller: Principal, project_id: str, periods: Mapping[str, float | None]
    ) -> RetentionPolicy:
        """Change the periods named in `periods` (seconds; None: for ever); the others stay."""
        try:
            given = RetentionPolicy.checked(periods)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None

        def run(tx: Tx) -> RetentionPolicy:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            old = tx.retention.policy(project_id)
            new = replace(old, **{k: given.period(RetainedKind(k)) for k in periods})
            tx.retention.set_policy(project_id, new, tx.now, caller.id)
            changed = {k.value: new.period(k) for k in RetainedKind}
            self.ctx.audit(tx, project_id, "retention.set", caller, project_id, **changed)
            return new

        return self.ctx.write_in(project_id, run)

    # legal holds ----------------------------------------------------------------
    def place_hold(self, caller: Principal, project_id: str, task_id: str | None, reason: str) -> Hold:
        """Hold a task's evidence (or the whole project's, `task_id` None) until released."""
        why = _reason(reason)
        if task_id is not None:
            check_id(task_id, "task")

        def run(tx: Tx) -> Hold:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            if task_id is not None:
                task = tx.work.task(task_id)
                if task is None or task.project_id != project_id:
                    raise NotFound(f"task {task_id} not found", reason=ErrorReason.NOT_FOUND)
            hold = Hold(self.ctx.ids.new("hld"), project_id, task_id, why, caller.id, tx.now)
            tx.retention.add_hold(hold)
            self.ctx.audit(tx, project_id, "hold.placed", caller, hold.id, task=task_id, reason=why)
            return hold

        return self.ctx.write_in(project_id, run)

    def release_hold(self, caller: Principal, hold_id: str, reason: str) -> Hold:
        """End a live hold (audited, with a reason)."""
        why = _reason(reason)
        check_id(hold_id, "hold")

        def run(tx: Tx) -> Hold:
            hold = tx.retention.hold(hold_id)
            if hold is None or not self.ctx.sees_project(tx, caller, hold.project_id):
                raise NotFound(f"hold {hold_id} not found")
            self.ctx.require(tx, caller, hold.project_id, Action.ADMIN)
            if not hold.live:
                raise Conflict(f"hold {hold_id} was released already")
            tx.retention.release_hold(hold_id, tx.now, caller.id, why)
            self.ctx.audit(
                tx, hold.project_id, "hold.released", caller, hold_id, task=hold.task_id, reason=why
            )
            return replace(hold, released_at=tx.now, released_by=caller.id, release_reason=why)

        return self.ctx.store.write(run)

    # deletion on request ------------------------------------------------------------
    def delete_bytes(self, caller: Principal, project_id: str, digest: str, reason: str) -> Tombstone:
        """Delete bytes the project holds (published, in a candidate, uploaded), for example a
        secret committed by mistake: the blob goes, a tombstone and `bytes.deleted` record
        what, by whom, when and why. A project admin deletes bytes only its project holds; a
        service admin any. A hold on the project, or on a task a candidate of which names the
        bytes, refuses (`legal_hold`)."""
        why = _reason(reason)
        if not is_digest(digest):
            raise InvalidRequest(f"malformed digest {str(digest)[:80]!r}")

        def run(tx: Tx) -> Tombstone:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            r = tx.retention
            projects = r.projects_naming(digest)
            if project_id not in projects:
                raise NotFound(f"blob {digest} not found", reason=ErrorReason.BLOB_MISSING)
            if projects - {project_id} and not caller.is_service_admin:
                raise NotAuthorized("other projects hold these bytes too: only a service admin deletes them")
            for pid in sorted(projects):
                hold = holding(r.holds(pid), pid, [None, *sorted(r.tasks_naming(pid, digest))])
                if hold is not None:
                    raise Conflict(
                        f"{hold.id} holds these bytes: {hold.reason}", reason=ErrorReason.LEGAL_HOLD
                    )
            size = r.blob_sizes([digest]).get(digest)
            if size is None:
                stone = r.tombstones(project_id, [digest]).get(digest)
                if stone is not None:
                    raise deleted_error(stone)
                raise NotFound(f"blob {digest} not found", reason=ErrorReason.BLOB_MISSING)
            stones = [self._delete_in(tx, caller, pid, digest, size, why) for pid in sorted(projects)]
            tx.content.delete_blobs([digest])
            return next(s for s in stones if s.project_id == project_id)

        return self.ctx.store.write(run)  # the whole ledger: bytes are shared across projects

    def _delete_in(
        self, tx: Tx, caller: Principal, project_id: str, digest: str, size: int, why: str
    ) -> Tombstone:
        """Tombstone the bytes in one project, and delete every current artifact that holds
        them (a new revision: the git projection publishes a commit that removes the file)."""
        paths = tuple(sorted(tx.content.paths_of_blob(project_id, digest)))
        stone = Tombstone(project_id, digest, size, paths, ", ".join(paths) or digest, why, caller.id, tx.now)
        tx.retention.add_tombstone(stone)
        holding_now = [a.path for a in tx.content.artifacts(project_id) if a.digest == digest]
        revisions = {
            path: tx.content.write_artifact(project_id, path, None, tx.now, caller.id, "bytes.deleted", None)
            for path in holding_now
        }
        seq = self.ctx.audit(
            tx, project_id, "bytes.deleted", caller, digest,
            size=size, paths=list(paths), reason=why, revisions=revisions,
        )  # fmt: skip
        if revisions:
            meta = {"title": f"Remove deleted bytes: {why}", "revisions": revisions}
            changes = {path: (None, FileMode.REGULAR) for path in revisions}
            tx.publications.append(project_id, seq, "edit", caller.id, tx.now, changes, meta)
        return stone

    # the sweep ---------------------------------------------------------------------
    def sweep_retention(self, caller: Principal | None, project_id: str | None = None) -> list[SweepReport]:
        """Delete what is past its project's retention period, in batches (each batch one
        transaction, audited as `retention.swept`). Without `project_id`: every project (a
        service admin, or `caller` None for the server's own timer)."""
        if project_id is None and caller is not None and not caller.is_service_admin:
            raise NotAuthorized("only a service administrator sweeps every project")
        if project_id is not None:
            check_id(project_id, "project")
            projects = [project_id]
        else:
            projects = self.ctx.store.read(lambda tx: tx.retention.projects_with_policy())
        reports = []
        for pid in projects:
            report = self._sweep_batch(caller, pid)
            while report.more:
                more = self._sweep_batch(caller, pid)
                report = _merge(report, more)
            reports.append(report)
        return reports

    def _sweep_batch(self, caller: Principal | None, project_id: str) -> SweepReport:
        def run(tx: Tx) -> SweepReport:
            if caller is not None:
                self.ctx.require_project(tx, caller, project_id)
                self.ctx.require(tx, caller, project_id, Action.ADMIN)
            report = _sweep(tx, project_id)
            if report.swept:
                self.ctx.audit(
                    tx,
                    project_id,
                    "retention.swept",
                    caller,
                    project_id,
                    swept=dict(report.swept),
                    blobs=report.blobs,
                    bytes=report.bytes,
                )
            return report

        return self.ctx.write_in(project_id, run)


def _sweep(tx: Tx, project_id: str) -> SweepReport:
    r = tx.retention
    policy, holds = r.policy(project_id), r.holds(project_id)
    if holding(holds, project_id, [None]) is not None:
        return SweepReport(project_id)  # the whole project is held
    finders = {
        RetainedKind.CANDIDATES: r.expired_candidates,
        RetainedKind.VERIFIER_LOGS: r.expired_logs,
        RetainedKind.DELEGATIONS: r.expired_delegations,
    }
    held = sorted({h.task_id for h in holds if h.task_id is not None})  # a hold wins over retention
    swept: dict[str, int] = {}
    more = False
    named: dict[str, str] = {}  # digest → the subject that named it
    for kind, find in finders.items():
        period = policy.period(kind)
        if period is None:
            continue
        found = find(project_id, tx.now - period, _SWEEP_BATCH, held)
        more = more or len(found) >= _SWEEP_BATCH
        taken = [x for x in found if holding(holds, project_id, [x[1]]) is None]  # none, by the query
        r.mark_swept(kind, project_id, [x[0] for x in taken], tx.now)
        if taken:
            swept[kind.value] = len(taken)
        for subject, _task, digests in taken:
            for d in digests:
                named.setdefault(d, f"{kind.value}:{subject}")
    redacted, more_detail = _redact_detail(tx, project_id, policy.audit_detail, held)
    if redacted:
        swept[RetainedKind.AUDIT_DETAIL.value] = redacted
    more = more or more_detail
    gone = sorted(set(named) - r.still_named(named))
    sizes = r.blob_sizes(gone)
    for d in gone:
        if d in sizes:
            why = f"retention: {named[d].split(':')[0]} past the project's period"
            paths = tuple(sorted(tx.content.paths_of_blob(project_id, d)))
            r.add_tombstone(
                Tombstone(project_id, d, sizes[d], paths, named[d], why, RETAINED_BY_SWEEP, tx.now)
            )
    tx.content.delete_blobs(list(sizes))
    return SweepReport(project_id, swept, len(sizes), sum(sizes.values()), more and bool(swept))


def _redact_detail(tx: Tx, project_id: str, period: float | None, held: Sequence[str]) -> tuple[int, bool]:
    """Replace the detail of the project's events older than `period` by a redaction marker
    that keeps its digest (who, when, why): the oldest `_SWEEP_BATCH` whose detail is still
    there, none up to meta `detail_split` (hashed over their whole detail), none naming a
    held task. An event whose detail does not recompute its hash is left as it is, for
    `studiolo audit verify` to report. Returns (redacted, whether the batch was full)."""
    if period is None:
        return 0, False
    split = tx.meta.get("detail_split")
    if split is None:
        return 0, False  # a ledger not yet migrated: nothing is hashed the new way
    found = tx.audit.detail_expired(project_id, int(split), tx.now - period, _SWEEP_BATCH, held)
    why = f"retention: audit detail older than {period:g} s"
    taken = []
    for e in found:
        digest = digest_json(dict(e.data))
        if detail_hash(e.prev_hash, e.seq, e.project_id, e.kind, e.actor, e.subject, e.at, digest) != e.hash:
            continue
        tx.audit.redact(e.seq, {"digest": digest, "at": tx.now, "by": RETAINED_BY_SWEEP, "reason": why})
        taken.append(str(e.seq))
    tx.retention.mark_swept(RetainedKind.AUDIT_DETAIL, project_id, taken, tx.now)
    return len(taken), len(found) >= _SWEEP_BATCH


def _merge(a: SweepReport, b: SweepReport) -> SweepReport:
    swept = dict(a.swept)
    for k, n in b.swept.items():
        swept[k] = swept.get(k, 0) + n
    return SweepReport(a.project_id, swept, a.blobs + b.blobs, a.bytes + b.bytes, b.more)
