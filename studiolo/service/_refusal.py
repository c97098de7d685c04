"""What the completion transaction reads, only when it refuses, to say what changed
(`core.refusal`): the events behind the failed predicates, read in the same transaction as
the verdict, and what the caller may read of them (`core.refusal_view.Reader`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

from studiolo.core.model import Action, Attempt, AttemptStatus, Event, Grant, Principal
from studiolo.core.predicate import CompletionFacts, Verdict
from studiolo.core.reasons import Reason
from studiolo.core.refusal import Change, Circumstances, Detail
from studiolo.core.refusal_view import Reader, for_audit, readable_paths, redact
from studiolo.store import Tx

__all__ = ["SERVICE_ADMIN", "circumstances", "confined_rejections", "names_in", "reader_of"]

SERVICE_ADMIN = "a service administrator"
_MAX_REVOKED = 20  # the caller's most recently revoked grants a refusal looks at
_PRINCIPAL_KEYS = frozenset({"owner", "caller", "holder", "issuer", "by"})


def circumstances(tx: Tx, f: CompletionFacts, verdict: Verdict) -> Circumstances:
    """The extra facts the failed predicates of `verdict` are explained by (read only for those)."""
    task, failed = f.task, set(verdict.failed)
    if task is None:
        return Circumstances()
    pid = task.project_id

    def latest(subject: str, *kinds: str) -> Change | None:
        return _change(tx.audit.latest_of(pid, subject, kinds))

    superseded = Reason.ATTEMPT_SUPERSEDED in failed
    attempts = tuple(sorted(tx.work.attempts(task.id), key=lambda a: a.fence)) if superseded else ()
    stale = bool({Reason.DEPENDENCY_STALE, Reason.TARGET_BASE_STALE} & failed)
    return Circumstances(
        attempts=attempts,
        attempt_change=_attempt_change(tx, pid, f, attempts) if superseded else None,
        task_change=latest(task.id, "task.cancelled", "completion.accepted")
        if Reason.TASK_NOT_ACTIVE in failed
        else None,
        migration=latest(task.id, "task.migrated") if Reason.CONTRACT_MISMATCH in failed else None,
        revoked=tuple(_revoked(tx, pid, f.caller)) if Reason.NOT_AUTHORIZED in failed else (),
        path_changes=_path_changes(tx, pid, f) if stale else {},
    )


def _change(e: Event | None) -> Change | None:
    if e is None:
        return None
    cause = str(e.data.get("completion") or e.kind)
    return Change(e.at, e.actor, cause, e.seq, str(e.data.get("reason") or ""))


def _attempt_change(tx: Tx, pid: str, f: CompletionFacts, attempts: Iterable[Attempt]) -> Change | None:
    """What ended the named attempt: its release, or the claim or reassignment after it."""
    a = f.attempt
    if a is None:
        return None
    if a.status is AttemptStatus.RELEASED:
        return _change(tx.audit.latest_of(pid, a.id, ("attempt.released",)))
    after = next((x for x in attempts if x.fence > a.fence), None)
    if a.status is not AttemptStatus.SUPERSEDED or after is None:
        return None
    return _change(tx.audit.latest_of(pid, after.id, ("attempt.claimed", "attempt.reassigned")))


def _revoked(tx: Tx, pid: str, caller: Principal) -> Iterator[tuple[Grant, Change | None]]:
    if caller.project_id != pid:
        return
    gone = [g for g in tx.access.grants_of(caller.id, pid, live_only=False) if not g.live]
    gone.sort(key=lambda g: g.revoked_at or 0.0, reverse=True)
    for g in gone[:_MAX_REVOKED]:
        yield g, _change(tx.audit.latest_of(pid, g.id, ("grant.revoked",)))


def _path_changes(tx: Tx, pid: str, f: CompletionFacts) -> dict[str, Change]:
    """Who made the current revision of every declared path that moved."""
    cand = f.candidate
    if cand is None:
        return {}
    declared = {**cand.file_deps, **cand.bases}
    moved = {p: f.artifact_revisions.get(p, 0) for p in declared}
    moved = {p: r for p, r in moved.items() if r and r != declared[p]}
    found = tx.content.changes(pid, moved)
    return {
        p: Change(at, actor, cause, _edit_seq(tx, pid, p, moved[p], cause))
        for p, (at, actor, cause) in found.items()
    }


def _edit_seq(tx: Tx, pid: str, path: str, revision: int, cause: str) -> int | None:
    """The audit event of a direct edit that made `revision` (a completion names itself)."""
    if cause != "edit":
        return None
    e = tx.audit.latest_of(pid, path, ("artifact.edited",))
    return e.seq if e is not None and e.data.get("revision") == revision else None


def reader_of(caller: Principal, grants: Iterable[Grant], names: Mapping[str, str] | None = None) -> Reader:
    """What the caller may read, from its live grants in the project (`Context.path_reader`'s rule)."""
    if caller.is_service_admin:
        return Reader(None, names or {})
    reads = [g for g in grants if g.allows(Action.READ)]
    if any("**" in g.scope for g in reads):
        return Reader(None, names or {})
    return Reader(tuple(dict.fromkeys(p for g in reads for p in g.scope)), names or {})


def confined_rejections(events: Iterable[Event], reader: Reader) -> tuple[Event, ...]:
    """`completion.rejected` events as the reader may see them: their details redacted, and
    only the paths it may read listed."""
    return tuple(_confined(e, reader) if e.data.get("details") else e for e in events)


def _confined(e: Event, reader: Reader) -> Event:
    details = redact(e.data.get("details") or [], reader)
    paths = readable_paths([str(p) for p in e.data.get("paths") or []], reader)
    return replace(e, data={**e.data, "details": details, "paths": paths})


def names_in(tx: Tx, project_id: str, details: Iterable[Detail]) -> dict[str, str]:
    """The names of the project's principals the details mention (id → name); a service
    administrator is named as one, not by its name."""
    ids = set(_ids(for_audit(details)))
    found = [p for p in (tx.access.principal(i) for i in sorted(ids)) if p is not None]
    names = {p.id: p.name for p in found if p.project_id == project_id}
    return names | {p.id: SERVICE_ADMIN for p in found if p.is_service_admin}


def _ids(value: object) -> Iterator[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k in _PRINCIPAL_KEYS and isinstance(v, str):
                yield v
            else:
                yield from _ids(v)
    elif isinstance(value, list):
        for v in value:
            yield from _ids(v)
