"""Tasks and attempts: create, cancel, migrate, claim, heartbeat, release, reassign, and the
handoff an attempt leaves for its successor."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial

from studiolo._exceptions import Conflict, InvalidRequest, NotFound, StudioloError
from studiolo.core import limits
from studiolo.core.lease import is_live
from studiolo.core.model import (
    Action,
    Attempt,
    AttemptStatus,
    Contract,
    Criterion,
    Handoff,
    Principal,
    Task,
    TaskStatus,
)
from studiolo.core.paths import normalize_path
from studiolo.core.reasons import ErrorReason, Reason
from studiolo.service._door import Context
from studiolo.service._ids import check_id, check_scope
from studiolo.store import Tx, volatile
from studiolo.store.gate import Gate

# A title holding an embedding, override or isolate control would display reordered.
_BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")
_MIN_LEASE_SECONDS = 1.0  # shorter leases expire before a heartbeat can renew them

__all__ = ["Beat", "WorkOps"]

Beat = tuple[Principal, str, float | None]  # a heartbeat: caller, attempt id, lease seconds (None: default)


class WorkOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def create_task(
        self,
        caller: Principal,
        project_id: str,
        title: str,
        *,
        criteria: Mapping[str, str],
        scope: Iterable[str],
        description: str = "",
        policy_version: int | None = None,
        requires_deployment: bool = False,
        allow_evidence_reuse: bool = False,
        separate_verdict: Iterable[str] = (),
    ) -> Task:
        """Create a task and pin its contract (the latest policy unless told otherwise).
        `separate_verdict` names criteria whose passing receipts must have been computed
        where the candidate's code never ran (docs/verifiers.md)."""
        if not isinstance(title, str) or not title.strip() or len(title) > limits.TITLE:
            raise InvalidRequest(f"a task needs a title of at most {limits.TITLE} characters")
        if _BIDI_CONTROL.search(title):
            raise InvalidRequest("a title may not hold bidirectional control characters (U+202A-E, U+2066-9)")
        if not isinstance(description, str) or len(description) > limits.DESCRIPTION:
            raise InvalidRequest(f"description must be text of at most {limits.DESCRIPTION:,} characters")
        patterns = check_scope(scope)

        def run(tx: Tx) -> Task:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            task_id = self.ctx.ids.new("tsk")
            contract = self.contract(
                tx,
                project_id,
                task_id,
                criteria,
                patterns,
                policy_version,
                requires_deployment=requires_deployment,
                allow_evidence_reuse=allow_evidence_reuse,
                separate_verdict=separate_verdict,
            )
            task = Task.open(
                id=task_id,
                project_id=project_id,
                title=title,
                description=description,
                contract=contract,
                created_at=tx.now,
            )
            tx.work.add_task(task)
            self.ctx.audit(
                tx,
                project_id,
                "task.created",
                caller,
                task.id,
                title=title,
                contract_hash=task.contract_hash,
                contract=contract.to_json(),
            )
            return task

        return self.ctx.write_in(project_id, run)

    def contract(
        self,
        tx: Tx,
        project_id: str,
        task_id: str,
        criteria: Mapping[str, str],
        scope: tuple[str, ...],
        policy_version: int | None,
        *,
        requires_deployment: bool = False,
        allow_evidence_reuse: bool = False,
        separate_verdict: Iterable[str] = (),
    ) -> Contract:
        if not isinstance(criteria, Mapping) or not criteria:
            raise InvalidRequest("a contract needs at least one criterion → checker name@version")
        separate = set(separate_verdict)
        if not separate <= set(criteria):
            raise InvalidRequest(
                f"separate_verdict names unknown criteria: {sorted(separate - set(criteria))}"
            )
        known = {c.ref for c in tx.access.checkers(project_id)}
        crits = []
        for cid, ref in sorted(criteria.items()):
            if not isinstance(cid, str) or not cid or len(cid) > limits.CRITERION_ID:
                raise InvalidRequest(f"invalid criterion id {cid!r}")
            if ref not in known:
                raise InvalidRequest(f"checker {ref!r} is not admitted", reason=ErrorReason.UNKNOWN_CHECKER)
            crits.append(Criterion(cid, ref, cid in separate))
        if policy_version is None:
            latest = tx.access.latest_policy(project_id)
            if latest is None:
                raise InvalidRequest("publish a policy before creating tasks")
            policy_version = latest.version
        elif tx.access.policy(project_id, policy_version) is None:
            raise InvalidRequest(f"policy version {policy_version} does not exist")
        return Contract(
            task_id=task_id,
            criteria=tuple(crits),
            scope=scope,
            policy_version=policy_version,
            requires_deployment=requires_deployment,
            allow_evidence_reuse=allow_evidence_reuse,
        )

    def cancel_task(self, caller: Principal, task_id: str, reason: str = "") -> Task:
        """Cancel an open or claimed task (admin; audited)."""

        def run(tx: Tx) -> Task:
            task = self.ctx.visible_task(tx, caller, task_id)
            self.ctx.require(tx, caller, task.project_id, Action.ADMIN)
            if not task.active:
                raise Conflict(f"task is {task.status.value}", reason=Reason.TASK_NOT_ACTIVE)
            tx.work.update_task(task.id, status=TaskStatus.CANCELLED)
            self.ctx.audit(tx, task.project_id, "task.cancelled", caller, task.id, reason=reason)
            return tx.work.task(task.id) or task

        return self.ctx.write_about("task", task_id, run)

    def migrate_task(
        self,
        caller: Principal,
        task_id: str,
        *,
        criteria: Mapping[str, str] | None = None,
        scope: Iterable[str] | None = None,
        policy_version: int | None = None,
        separate_verdict: Iterable[str] | None = None,
    ) -> Task:
        """Explicitly change a task's contract: a new hash, an audited transition."""

        def run(tx: Tx) -> Task:
            task = self.ctx.visible_task(tx, caller, task_id)
            self.ctx.require(tx, caller, task.project_id, Action.ADMIN)
            if not task.active:
                raise Conflict(f"task is {task.status.value}", reason=Reason.TASK_NOT_ACTIVE)
            old = task.contract
            crit = criteria if criteria is not None else {c.id: c.checker for c in old.criteria}
            patterns = check_scope(scope) if scope is not None else old.scope
            version = policy_version if policy_version is not None else old.policy_version
            separate = old.separate_verdict if separate_verdict is None else separate_verdict
            new = self.contract(
                tx,
                task.project_id,
                task.id,
                crit,
                patterns,
                version,
                requires_deployment=old.requires_deployment,
                allow_evidence_reuse=old.allow_evidence_reuse,
                separate_verdict=[c for c in separate if c in crit],
            )
            tx.work.update_task(task.id, contract=new, contract_hash=new.hash)
            self.ctx.audit(
                tx,
                task.project_id,
                "task.migrated",
                caller,
                task.id,
                old_contract_hash=task.contract_hash,
                contract_hash=new.hash,
                contract=new.to_json(),
            )
            return tx.work.task(task.id) or task

        return self.ctx.write_about("task", task_id, run)

    # attempts --------------------------------------------------------------
    def claim(self, caller: Principal, task_id: str, lease_seconds: float | None = None) -> Attempt:
        """Start an attempt on a task that has no live one: a new fence and lease (audited)."""
        lease = self._lease(lease_seconds)

        def run(tx: Tx) -> Attempt:
            task = self.ctx.visible_task(tx, caller, task_id)
            self.ctx.require(tx, caller, task.project_id, Action.CLAIM)
            if not task.active:
                raise Conflict(f"task is {task.status.value}", reason=Reason.TASK_NOT_ACTIVE)
            current = tx.work.attempt(task.current_attempt_id) if task.current_attempt_id else None
            if current is not None and is_live(current, tx.incarnation, tx.now):
                raise Conflict("the task has a live attempt", reason=ErrorReason.TASK_ALREADY_CLAIMED)
            return self.start_attempt(tx, task, caller, caller, lease, "attempt.claimed")

        return self.ctx.write_about("task", task_id, run)

    def reassign(
        self, caller: Principal, task_id: str, principal_id: str, lease_seconds: float | None = None
    ) -> Attempt:
        """Replace the current attempt (live or not) with a new one for `principal_id`."""
        lease = self._lease(lease_seconds)

        def run(tx: Tx) -> Attempt:
            task = self.ctx.visible_task(tx, caller, task_id)
            self.ctx.require(tx, caller, task.project_id, Action.ADMIN)
            if not task.active:
                raise Conflict(f"task is {task.status.value}", reason=Reason.TASK_NOT_ACTIVE)
            target = tx.access.principal(check_id(principal_id, "principal id"))
            if target is None or target.project_id != task.project_id:
                raise NotFound(f"principal {principal_id} not found in this project")
            return self.start_attempt(tx, task, target, caller, lease, "attempt.reassigned")

        return self.ctx.write_about("task", task_id, run)

    def heartbeat(self, caller: Principal, attempt_id: str, lease_seconds: float | None = None) -> Attempt:
        """Extend a live lease: a conditional update of the attempt, not an audit event (the
        completion's event records the deadline it relied on). On SQLite it commits without
        its own fsync: a lost extension only shortens a lease (docs/operations.md)."""
        (outcome,) = self.heartbeats([(caller, attempt_id, lease_seconds)])
        if isinstance(outcome, StudioloError):
            raise outcome
        return outcome

    def heartbeats(self, beats: Sequence[Beat]) -> list[Attempt | StudioloError]:
        """Many heartbeats (a server's queued ones), each checked and answered as `heartbeat`
        alone would be, written together: one transaction per writer gate (one on SQLite).
        A heartbeat refused writes nothing, so it fails alone; an error of the store fails all."""
        outcomes: list[Attempt | StudioloError | None] = [None] * len(beats)
        leases: dict[Gate, dict[int, float]] = {}
        for i, (_, attempt_id, seconds) in enumerate(beats):
            try:
                lease = self._lease(seconds)
                check_id(attempt_id, "attempt id")
                gate = self.ctx.store.batch_gate(partial(self.ctx.gate_of, "attempt", attempt_id))
            except StudioloError as exc:
                outcomes[i] = exc
                continue
            leases.setdefault(gate, {})[i] = lease

        for gate, group in leases.items():

            def run(tx: Tx, group: dict[int, float] = group) -> None:
                found = tx.work.leases([beats[i][1] for i in group])
                for i, lease in group.items():
                    caller, attempt_id, _ = beats[i]
                    try:
                        outcomes[i] = self._extend(tx, caller, attempt_id, found.get(attempt_id), lease)
                    except StudioloError as exc:
                        outcomes[i] = exc

            self.ctx.store.write(volatile(run), gate)
        return [o for o in outcomes if o is not None]

    def _extend(
        self, tx: Tx, caller: Principal, attempt_id: str, found: tuple[Attempt, Task] | None, lease: float
    ) -> Attempt:
        if found is None or not self.ctx.may_read_task(tx, caller, found[1]):
            raise NotFound(f"attempt {attempt_id} not found")
        attempt, task = found
        if attempt.principal_id != caller.id:
            raise Conflict("the attempt belongs to another principal", reason=Reason.CALLER_NOT_ATTEMPT_OWNER)
        if not task.active:
            raise Conflict(f"task is {task.status.value}", reason=Reason.TASK_NOT_ACTIVE)
        if not is_live(attempt, tx.incarnation, tx.now) or task.current_attempt_id != attempt.id:
            raise Conflict("the attempt is no longer live", reason=ErrorReason.ATTEMPT_NOT_ACTIVE)
        deadline = tx.now + lease
        if not tx.work.extend_lease(attempt, tx.now, deadline):
            raise Conflict("the attempt is no longer live", reason=ErrorReason.ATTEMPT_NOT_ACTIVE)
        return replace(attempt, lease_deadline=deadline)

    def release(self, caller: Principal, attempt_id: str) -> Attempt:
        """Give up the caller's current attempt: the task is open again (audited)."""

        def run(tx: Tx) -> Attempt:
            attempt, task = self._own_attempt(tx, caller, attempt_id)
            if attempt.status is not AttemptStatus.ACTIVE or task.current_attempt_id != attempt.id:
                raise Conflict(
                    "the attempt is not the task's current one", reason=ErrorReason.ATTEMPT_NOT_ACTIVE
                )
            self.end_current_attempt(tx, task, AttemptStatus.RELEASED)
            tx.work.update_task(task.id, status=TaskStatus.OPEN, current_attempt_id=None)
            self.ctx.audit(tx, task.project_id, "attempt.released", caller, attempt.id, task=task.id)
            return tx.work.attempt(attempt.id) or attempt

        return self.ctx.write_about("attempt", attempt_id, run)

    def handoff(
        self,
        caller: Principal,
        attempt_id: str,
        *,
        artifacts: Mapping[str, int],
        obligations: Iterable[str] = (),
        notes: str = "",
    ) -> Handoff:
        """Leave references to authority for a successor (not a copy of the conversation)."""
        arts = {normalize_path(p): int(r) for p, r in artifacts.items()}
        obl = tuple(str(o) for o in obligations)
        too_long = any(len(text) > limits.HANDOFF_NOTES for text in (notes, *obl))
        if too_long or len(obl) > limits.OBLIGATIONS:
            raise InvalidRequest(
                f"handoff notes and obligations ≤ {limits.HANDOFF_NOTES:,} characters each,"
                f" ≤ {limits.OBLIGATIONS} obligations"
            )

        def run(tx: Tx) -> Handoff:
            attempt, task = self._own_attempt(tx, caller, attempt_id)
            h = Handoff(
                id=self.ctx.ids.new("hnd"),
                task_id=task.id,
                attempt_id=attempt.id,
                principal_id=caller.id,
                contract_hash=task.contract_hash,
                artifacts=arts,
                obligations=obl,
                notes=notes,
                created_at=tx.now,
            )
            tx.work.add_handoff(h)
            self.ctx.audit(tx, task.project_id, "handoff.left", caller, task.id, handoff=h.id)
            return h

        return self.ctx.write_about("attempt", attempt_id, run)

    def attempt(self, caller: Principal, attempt_id: str) -> Attempt:
        """An attempt, if the caller may read its task."""
        return self.ctx.store.read(lambda tx: self._readable_attempt(tx, caller, attempt_id)[0])

    def start_attempt(
        self, tx: Tx, task: Task, owner: Principal, actor: Principal, lease: float, kind: str
    ) -> Attempt:
        self.end_current_attempt(tx, task, AttemptStatus.SUPERSEDED)
        fence = task.fence + 1
        attempt = Attempt(
            self.ctx.ids.new("att"),
            task.id,
            owner.id,
            fence,
            tx.now + lease,
            tx.incarnation,
            AttemptStatus.ACTIVE,
            tx.now,
        )
        tx.work.add_attempt(attempt)
        tx.work.update_task(task.id, status=TaskStatus.CLAIMED, current_attempt_id=attempt.id, fence=fence)
        self.ctx.audit(
            tx,
            task.project_id,
            kind,
            actor,
            attempt.id,
            task=task.id,
            principal=owner.id,
            fence=fence,
            lease_deadline=attempt.lease_deadline,
            superseded=task.current_attempt_id,
        )
        return attempt

    @staticmethod
    def end_current_attempt(tx: Tx, task: Task, status: AttemptStatus) -> None:
        if task.current_attempt_id:
            tx.work.update_attempt(task.current_attempt_id, status=status)

    def _readable_attempt(self, tx: Tx, caller: Principal, attempt_id: str) -> tuple[Attempt, Task]:
        attempt = tx.work.attempt(check_id(attempt_id, "attempt id"))
        task = tx.work.task(attempt.task_id) if attempt else None
        if attempt is None or task is None or not self.ctx.may_read_task(tx, caller, task):
            raise NotFound(f"attempt {attempt_id} not found")
        return attempt, task

    def _own_attempt(self, tx: Tx, caller: Principal, attempt_id: str) -> tuple[Attempt, Task]:
        attempt, task = self._readable_attempt(tx, caller, attempt_id)
        if attempt.principal_id != caller.id:
            raise Conflict("the attempt belongs to another principal", reason=Reason.CALLER_NOT_ATTEMPT_OWNER)
        return attempt, task

    def _lease(self, seconds: float | None) -> float:
        value = self.ctx.settings.default_lease_seconds if seconds is None else seconds
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise InvalidRequest("lease_seconds must be a number of seconds")
        if value < _MIN_LEASE_SECONDS:
            raise InvalidRequest(f"lease_seconds is at least {_MIN_LEASE_SECONDS:g}")
        if value > self.ctx.settings.max_lease_seconds:
            raise InvalidRequest(f"lease_seconds exceeds {self.ctx.settings.max_lease_seconds:g}")
        return float(value)
