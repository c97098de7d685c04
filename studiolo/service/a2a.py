"""Delegated work (the A2A face's door): intake templates, delegations, their views, and
the cancel that shares the completion's commit point (one write transaction each)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from studiolo._exceptions import Conflict, InvalidRequest, NotAuthorized, NotFound
from studiolo.core.intake import Delegation, IntakeTemplate
from studiolo.core.model import Action, Principal, Task, TaskStatus
from studiolo.core.paths import matches_any
from studiolo.core.reasons import ErrorReason, Reason
from studiolo.keys import ServiceKey
from studiolo.service._door import Context
from studiolo.service._ids import check_name, check_scope
from studiolo.service.views import TaskView, ViewOps
from studiolo.service.work import WorkOps
from studiolo.store import Tx

__all__ = ["A2AOps", "DelegatedView", "DelegationRequest", "PublishedFile"]

_MAX_INPUTS = 64 * 1024  # characters of the requester's inputs (JSON)
_MAX_ID = 100


@dataclass(frozen=True)
class DelegationRequest:
    """What a requester may supply: never the contract."""

    a2a_id: str
    context_id: str
    intake: str | None  # the template name; None: the project's only template
    title: str
    description: str
    inputs: Mapping[str, Any]
    message: Mapping[str, Any]


@dataclass(frozen=True)
class PublishedFile:
    path: str
    revision: int
    digest: str  # sha256:<hex> of `data`
    data: bytes


@dataclass(frozen=True)
class DelegatedView:
    """A delegation and the ledger's facts about its task, read in one transaction."""

    delegation: Delegation
    view: TaskView | None  # None: intake refused
    files: tuple[PublishedFile, ...]  # the accepted completion's published files
    kid: str
    updated_at: float  # the ledger's last change to the task, its attempts, candidates or receipts


class A2AOps:
    def __init__(self, ctx: Context, work: WorkOps, views: ViewOps) -> None:
        self.ctx = ctx
        self.work = work
        self.views = views

    # intake templates ---------------------------------------------------------
    def define_intake(
        self,
        caller: Principal,
        project_id: str,
        name: str,
        *,
        description: str,
        criteria: Mapping[str, str],
        scope: Iterable[str],
        policy_version: int | None = None,
    ) -> IntakeTemplate:
        """Define (or replace) the contract a delegated task of this kind gets."""
        name = check_name(name, "intake name")
        if not isinstance(description, str) or len(description) > 2000:
            raise InvalidRequest("an intake description is text of at most 2,000 characters")
        patterns = check_scope(scope)

        def run(tx: Tx) -> IntakeTemplate:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            self.work.contract(tx, project_id, "tsk_template", criteria, patterns, policy_version)
            t = IntakeTemplate(
                project_id, name, description, dict(criteria), patterns, policy_version, tx.now
            )
            tx.a2a.put_intake(t)
            self.ctx.audit(tx, project_id, "a2a.intake.defined", caller, t.skill_id, **t.contract_json())
            return t

        return self.ctx.store.write(run)

    def intakes(self, caller: Principal, project_id: str) -> list[IntakeTemplate]:
        """The project's intake templates (the contract a delegated task of each kind gets)."""

        def run(tx: Tx) -> list[IntakeTemplate]:
            self.ctx.require_project(tx, caller, project_id)
            return tx.a2a.intakes(project_id)

        return self.ctx.store.read(run)

    def signing_key(self) -> ServiceKey:
        """The service key: the A2A face signs its card and artifact manifests with it."""
        return self.ctx.store.read(self.ctx.service_key)

    def delegable_intakes(self) -> list[IntakeTemplate]:
        """Every template of every project: the public Agent Card lists them as skills."""
        return self.ctx.store.read(lambda tx: tx.a2a.intakes())

    # delegations --------------------------------------------------------------
    def delegate(self, caller: Principal, q: DelegationRequest) -> DelegatedView:
        """Record a delegation: a Studiolo task from the template, or a refusal (audited)."""
        _check_request(q)

        def run(tx: Tx) -> DelegatedView:
            project_id = caller.project_id
            if project_id is None or not self._delegator(tx, caller, project_id):
                raise NotAuthorized(f"{caller.name} holds no live delegate grant")
            if tx.a2a.delegation(q.a2a_id) is not None:
                raise Conflict(f"A2A task {q.a2a_id} exists", reason=ErrorReason.REQUEST_ID_CONFLICT)
            template, refused = self._template(tx, caller, project_id, q)
            task = None
            if template is not None:
                try:
                    task = self._intake_task(tx, caller, template, q)
                except InvalidRequest as exc:  # e.g. a checker withdrawn since the template
                    refused = exc.detail
            d = Delegation(
                q.a2a_id,
                project_id,
                caller.id,
                q.context_id,
                template.name if template else (q.intake or ""),
                task.id if task else None,
                refused,
                dict(q.message),
                tx.now,
            )
            tx.a2a.add_delegation(d)
            kind = "a2a.delegated" if task else "a2a.refused"
            self.ctx.audit(tx, project_id, kind, caller, q.a2a_id, task=d.task_id, refused=refused)
            return self._delegated(tx, d)

        return self.ctx.store.write(run)

    def delegated(self, caller: Principal, a2a_id: str) -> DelegatedView:
        """A delegation, to its requester or a project admin."""
        return self.ctx.store.read(lambda tx: self._delegated(tx, self._visible(tx, caller, a2a_id)))

    def delegations(self, caller: Principal, limit: int = 50, offset: int = 0) -> list[DelegatedView]:
        """The delegations the caller requested, newest first, a page at a time."""
        if not 1 <= limit <= 100 or offset < 0:
            raise InvalidRequest("limit is 1..100 and offset ≥ 0")

        def run(tx: Tx) -> list[DelegatedView]:
            if caller.project_id is None or not self._delegator(tx, caller, caller.project_id):
                return []
            return [self._delegated(tx, d) for d in tx.a2a.delegations_of(caller.id, limit, offset)]

        return self.ctx.store.read(run)

    def cancel_delegated(self, caller: Principal, a2a_id: str) -> DelegatedView:
        """Cancel a delegated task. The same serialized commit point as a completion: of a
        cancel and an accepted completion racing, exactly one commits."""

        def run(tx: Tx) -> DelegatedView:
            d = self._visible(tx, caller, a2a_id)
            task = tx.work.task(d.task_id) if d.task_id else None
            if task is None or not task.active:
                state = task.status.value if task else "refused"
                raise Conflict(f"task is {state}", reason=Reason.TASK_NOT_ACTIVE)
            tx.work.update_task(task.id, status=TaskStatus.CANCELLED)
            self.ctx.audit(tx, task.project_id, "task.cancelled", caller, task.id, reason="a2a", a2a=d.id)
            return self._delegated(tx, d)

        return self.ctx.store.write(run)

    # helpers ------------------------------------------------------------------
    def _delegator(self, tx: Tx, caller: Principal, project_id: str) -> bool:
        grants = self.ctx.grants(tx, caller, project_id)
        return any(g.live and Action.DELEGATE in g.actions for g in grants)

    def _visible(self, tx: Tx, caller: Principal, a2a_id: str) -> Delegation:
        """The delegation, to its requester (while it may delegate) or a project admin."""
        d = tx.a2a.delegation(a2a_id) if isinstance(a2a_id, str) and len(a2a_id) <= _MAX_ID else None
        if d is not None:
            own = d.requester_id == caller.id and self._delegator(tx, caller, d.project_id)
            if own or self.ctx.can(tx, caller, d.project_id, Action.ADMIN):
                return d
        raise NotFound(f"task {str(a2a_id)[:_MAX_ID]} not found", reason=Reason.TASK_NOT_FOUND)

    def _template(
        self, tx: Tx, caller: Principal, project_id: str, q: DelegationRequest
    ) -> tuple[IntakeTemplate | None, str | None]:
        """The template the request names, if the caller's delegate grants cover its scope."""
        templates = {t.name: t for t in tx.a2a.intakes(project_id)}
        name = q.intake if q.intake is not None else (next(iter(templates)) if len(templates) == 1 else None)
        template = templates.get(name) if name is not None else None
        if template is None:
            return None, f"no intake template {q.intake!r} in this project"
        grants = [
            g for g in self.ctx.grants(tx, caller, project_id) if g.live and Action.DELEGATE in g.actions
        ]
        uncovered = [p for p in template.scope if not any(matches_any(g.scope, p) for g in grants)]
        if uncovered:
            return None, f"the delegate grant does not cover {uncovered[0]!r}"
        return template, None

    def _intake_task(self, tx: Tx, caller: Principal, t: IntakeTemplate, q: DelegationRequest) -> Task:
        task_id = self.ctx.ids.new("tsk")
        contract = self.work.contract(tx, t.project_id, task_id, t.criteria, t.scope, t.policy_version)
        description = q.description
        if q.inputs:
            description += "\n\nInputs (JSON, from the requester):\n" + _json_text(q.inputs)
        task = Task.open(
            id=task_id,
            project_id=t.project_id,
            title=q.title,
            description=description,
            contract=contract,
            created_at=tx.now,
        )
        tx.work.add_task(task)
        self.ctx.audit(
            tx,
            t.project_id,
            "task.created",
            caller,
            task.id,
            title=q.title,
            contract_hash=task.contract_hash,
            contract=contract.to_json(),
            a2a=q.a2a_id,
            intake=t.name,
        )
        return task

    def _delegated(self, tx: Tx, d: Delegation) -> DelegatedView:
        kid = self.ctx.service_key(tx).kid
        task = tx.work.task(d.task_id) if d.task_id else None
        if task is None:
            return DelegatedView(d, None, (), kid, d.created_at)
        view = self.views.view_of(tx, task)
        files: tuple[PublishedFile, ...] = ()
        if view.completion is not None:
            found = tx.content.candidate(view.completion.candidate_id)
            published = found[1].files if found else {}
            files = tuple(
                PublishedFile(
                    path, view.completion.revisions.get(path, 0), digest, tx.content.blob(digest) or b""
                )
                for path, digest in sorted(published.items())
                if digest is not None
            )
        return DelegatedView(d, view, files, kid, _updated_at(tx, d, view))


def _updated_at(tx: Tx, d: Delegation, view: TaskView) -> float:
    """When the ledger last changed what the A2A status says: the latest audited event about
    the task, its attempts, candidates or receipts (a claim, a release, a cancel, a candidate,
    a receipt, the completion), never earlier than the delegation itself."""
    subjects = [view.task.id, *(a.id for a in view.attempts), *(c.id for c in view.candidates)]
    subjects += [r.id for r in view.receipts]
    latest = tx.audit.events_about(view.task.project_id, subjects, limit=1)
    times = [d.created_at, view.task.created_at, *(e.at for e in latest)]
    if view.completion is not None:
        times.append(view.completion.created_at)
    return max(times)


def _check_request(q: DelegationRequest) -> None:
    for value, what in ((q.a2a_id, "task id"), (q.context_id, "context id")):
        if not isinstance(value, str) or not 1 <= len(value) <= _MAX_ID or not value.isprintable():
            raise InvalidRequest(f"the A2A {what} is 1 to {_MAX_ID} printable characters")
    if q.intake is not None and not 1 <= len(q.intake.strip()) <= _MAX_ID:
        raise InvalidRequest(f"the intake name is 1 to {_MAX_ID} characters")
    if not q.title.strip() or len(q.title) > 300:
        raise InvalidRequest("a delegated task needs a title of at most 300 characters")
    if len(q.description) > 100_000 or len(_json_text(q.inputs)) > _MAX_INPUTS:
        raise InvalidRequest("description ≤ 100,000 characters and inputs ≤ 64 KiB of JSON")


def _json_text(value: Mapping[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1)
