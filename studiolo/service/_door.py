"""What every part of the door shares: the injected store, settings, clock and id source;
authorization (grants, read scope, visibility); the writer gates; the audit append; the
service key. One `Context` per door; every service of the door is built around it
(`Coordinator`, `service/__init__.py`)."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from studiolo._exceptions import NotAuthorized, NotFound
from studiolo.core.model import Action, Candidate, Grant, Principal, Task
from studiolo.core.reasons import Reason
from studiolo.keys import ServiceKey
from studiolo.observe.context import REQUEST_ID
from studiolo.service._auth import AuthCache
from studiolo.service._ids import IdSource, RandomIds, check_id
from studiolo.settings import Settings
from studiolo.store import Store, Tx
from studiolo.store.gate import Gate

__all__ = ["Context"]

T = TypeVar("T")


class Context:
    """The state and the checks every operation of the door shares (one instance per process)."""

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        ids: IdSource | None = None,
        disabled_checks: frozenset[Reason] = frozenset(),
    ) -> None:
        self.store = store
        self.settings = settings or Settings(database_url=store.url)
        self.clock = clock
        self.ids: IdSource = ids or RandomIds()
        self.disabled_checks = disabled_checks  # only the study's ablations set this
        self._service_key: tuple[str, ServiceKey] | None = None  # (meta text, parsed)
        self._key_in_tx = threading.local()  # (weakref to the tx, its key): one read per tx
        self.auth_cache = AuthCache()  # token hash → principal, per auth generation

    # authorization ---------------------------------------------------------
    @staticmethod
    def grants(tx: Tx, caller: Principal, project_id: str) -> list[Grant]:
        """The caller's live grants in the project (none in another project)."""
        who = Context.grantee(caller, project_id)
        return tx.access.grants_of(who, project_id) if who is not None else []

    @staticmethod
    def grantee(caller: Principal, project_id: str) -> str | None:
        """Whose live grants are the caller's in the project: its own, unless it is confined
        to another project (then none)."""
        return caller.id if caller.project_id in (None, project_id) else None

    def can(self, tx: Tx, caller: Principal, project_id: str, action: Action, path: str = "") -> bool:
        """Whether the caller holds a live grant of `action` in the project (covering `path`, if given)."""
        if caller.is_service_admin:
            return True
        grants = self.grants(tx, caller, project_id)
        if path:
            return any(g.covers(action, path) for g in grants)
        return any(g.allows(action) for g in grants)

    def require(self, tx: Tx, caller: Principal, project_id: str, action: Action, path: str = "") -> None:
        """`NotAuthorized` unless the caller `can` do `action` (on `path`)."""
        if not self.can(tx, caller, project_id, action, path):
            where = f" on {path!r}" if path else ""
            raise NotAuthorized(f"{caller.name} holds no live {action.value} grant{where}")

    def path_reader(self, tx: Tx, caller: Principal, project_id: str) -> Callable[[str], bool] | None:
        """None when the caller may read every path of the project; else which paths it may."""
        if caller.is_service_admin:
            return None
        grants = [g for g in self.grants(tx, caller, project_id) if g.allows(Action.READ)]
        if any("**" in g.scope for g in grants):
            return None
        return lambda path: any(g.covers(Action.READ, path) for g in grants)

    def confine(self, tx: Tx, caller: Principal, project_id: str, cand: Candidate) -> Candidate:
        """The candidate as this caller may see it: only paths inside its read scope."""
        may_read = self.path_reader(tx, caller, project_id)
        if may_read is None:
            return cand
        return replace(
            cand,
            files={p: d for p, d in cand.files.items() if may_read(p)},
            bases={p: r for p, r in cand.bases.items() if may_read(p)},
            file_deps={p: r for p, r in cand.file_deps.items() if may_read(p)},
            modes={p: m for p, m in cand.modes.items() if may_read(p)},
        )

    def sees_project(self, tx: Tx, caller: Principal, project_id: str) -> bool:
        """Whether the caller sees the project: any, for a service admin; else its own, while granted."""
        if caller.is_service_admin:
            return tx.access.project(project_id) is not None
        return caller.project_id == project_id and bool(self.grants(tx, caller, project_id))

    def require_project(self, tx: Tx, caller: Principal, project_id: str) -> None:
        """`NotFound` unless the id is well formed and the caller `sees_project`."""
        check_id(project_id, "project id")
        if not self.sees_project(tx, caller, project_id):
            raise NotFound(f"project {project_id} not found")

    def visible_task(self, tx: Tx, caller: Principal, task_id: str) -> Task:
        """The task, if the caller may read it; else `task_not_found` (never a hint)."""
        check_id(task_id, "task id")
        return self.shown_task(tx, caller, task_id, tx.work.task(task_id))

    def shown_task(self, tx: Tx, caller: Principal, task_id: str, task: Task | None) -> Task:
        """`visible_task` with the task already read (None: there is none)."""
        if task is None or not self.may_read_task(tx, caller, task):
            raise NotFound(f"task {task_id} not found", reason=Reason.TASK_NOT_FOUND)
        return task

    def may_read_task(self, tx: Tx, caller: Principal, task: Task) -> bool:
        """Whether the caller may read the task's project."""
        return self.can(tx, caller, task.project_id, Action.READ)

    # writes ----------------------------------------------------------------
    def write_in(self, project_id: str | None, run: Callable[[Tx], T]) -> T:
        """One write that appends to the project's audit chain: it takes that project's
        writer gate only, so other projects commit meanwhile (the store widens the gate and
        reruns `run` if it appends elsewhere). Writes that change what several projects
        read call `self.store.write(run)`: the whole ledger."""
        return self.store.write(run, Gate.project(project_id))

    def write_about(self, kind: str, ident: str, run: Callable[[Tx], T]) -> T:
        """`write_in` the project of a task, attempt or candidate (the ledger chain if none)."""
        return self.store.write(run, self.gate_of(kind, ident))

    def gate_of(self, kind: str, ident: str) -> Gate:
        """The writer gate of the project a task, attempt or candidate belongs to."""
        return Gate.project(self.store.project_of(kind, ident))

    # audit -----------------------------------------------------------------
    @staticmethod
    def audit(
        tx: Tx,
        project_id: str | None,
        kind: str,
        actor: Principal | None,
        subject: str | None,
        /,
        **data: Any,
    ) -> int:
        """Append an event to the project's audit chain (None: the ledger's chain); its sequence number.
        An event caused by an HTTP request records its id (`X-Request-Id`) as `x_request_id`."""
        request_id = REQUEST_ID.get()
        if request_id is not None:
            data["x_request_id"] = request_id
        event = tx.audit.append(project_id, kind, actor.id if actor else None, subject, data, tx.now)
        return event.seq

    # keys ------------------------------------------------------------------
    def service_key(self, tx: Tx) -> ServiceKey:
        """The signing key as of this transaction: read once per transaction (so a rotation
        made by another process applies to the next one), parsed only when it changes."""
        memo: tuple[weakref.ref[Tx], ServiceKey] | None = getattr(self._key_in_tx, "memo", None)
        if memo is not None and memo[0]() is tx:
            return memo[1]
        text = tx.meta.get("service_key")
        if text is None:
            raise NotFound("the ledger is not initialized: run `studiolo init`")
        cached = self._service_key
        if cached is None or cached[0] != text:
            cached = self._service_key = (text, ServiceKey.from_text(text))
        self._key_in_tx.memo = (weakref.ref(tx), cached[1])
        return cached[1]
