"""The delegation state machine at the door against its model, over random sequences of the
requester's reports (sent, terminal, finish, integrity failure, indeterminate), operator
reviews, and local reassignments: an edge outside `TRANSITIONS` is refused and changes
nothing, every accepted edge is one audit event, and the task is completed exactly when one
delegation finalized (never twice)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from studiolo._exceptions import Conflict
from studiolo.core.model import TaskStatus
from studiolo.core.quiescence import TaskState
from studiolo.core.remote import RemoteDelegation, RemoteFile, RemoteResult, RemoteState, can_move
from studiolo.keys import ServiceKey
from tests.store.pgdb import OnFreshPostgres, server_url
from tests.world import FakeClock, World, build_world

S = RemoteState
KEY = ServiceKey.generate()
REMOTE_END = st.sampled_from([TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED])


def _result(state: TaskState, files: int = 1) -> RemoteResult:
    got = tuple(RemoteFile(f"a{i}", f"out{i}.txt", f"bytes {i}".encode()) for i in range(files))
    return RemoteResult(state, b'{"manifest": "signed"}', got, (), KEY.kid)


class DelegationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="studiolo-remote-stateful-"))
        self.w: World = build_world(self.tmp, FakeClock(), url=self.database_url())
        self.d: RemoteDelegation | None = None
        self.state: RemoteState | None = None
        self.superseded = False  # the local task was reassigned away from the delegation
        self.edges = 0
        self.finalized = 0

    def database_url(self) -> str | None:
        return None

    def teardown(self) -> None:
        self.w.coord.store.dispose()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @initialize()
    def setup(self) -> None:
        c, w = self.w.coord, self.w
        c.add_remote_org(w.admin, w.project_id, "acme", {KEY.kid: KEY.public})
        c.grant(w.admin, w.project_id, w.agent.id, ["write", "claim", "complete"], ["remote/**"])
        self.task = w.new_task("remote", criteria={"ok": "a2a-acme@1"}, scope=["remote/**"])
        self._delegate()

    def _delegate(self) -> None:
        c, w = self.w.coord, self.w
        digest = "sha256:" + "0" * 64
        self.d = c.delegate_remote(
            w.admin, self.task.id, "acme", agent_url="http://acme.test", card_digest=digest, card_kid=KEY.kid
        )
        self.state, self.superseded = S.DELEGATED, False

    @property
    def _id(self) -> str:
        assert self.d is not None
        return self.d.id

    def _try(
        self,
        dst: RemoteState | None,
        call: Callable[[], RemoteDelegation],
        only_from: RemoteState | None = None,
    ) -> None:
        """Call the door; the model says whether `state → dst` is an edge (None: the door decides
        between two destinations, checked by the caller), and from which state the call may come."""
        assert self.state is not None
        allowed = dst is None or can_move(self.state, dst)
        allowed = allowed and (only_from is None or self.state is only_from)
        try:
            out = call()
        except Conflict:
            assert not allowed, f"{self.state} → {dst} refused"
            return
        assert allowed, f"{self.state} → {dst} accepted"
        self.state = out.state
        self.edges += 1
        self.finalized += out.state is S.FINALIZED

    @rule(remote=st.sampled_from(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]))
    def sent(self, remote: str) -> None:
        self._try(S.REMOTE_WORKING, lambda: self.w.coord.remote_sent(self._id, "remote-1", remote))

    @rule(remote=REMOTE_END)
    def terminal(self, remote: TaskState) -> None:
        self._try(S.AWAITING, lambda: self.w.coord.remote_terminal(self._id, remote))

    @rule()
    def send_failed(self) -> None:
        self._try(S.REMOTE_FAILED, lambda: self.w.coord.remote_send_failed(self._id, "refused"))

    @rule(remote=REMOTE_END)
    def finish(self, remote: TaskState) -> None:
        before = self.state
        ends = {TaskState.FAILED: S.REMOTE_FAILED, TaskState.REJECTED: S.REMOTE_FAILED}
        dst = ends.get(remote, S.REMOTE_CANCELED if remote is TaskState.CANCELED else S.FINALIZED)
        call = lambda: self.w.coord.remote_finish(self._id, _result(remote))  # noqa: E731
        self._try(dst, call, only_from=S.AWAITING)  # the worker's report: never from `indeterminate`
        if before is S.AWAITING and remote is TaskState.COMPLETED:
            assert self.state is (S.REFUSED if self.superseded else S.FINALIZED)

    @rule()
    def integrity(self) -> None:
        evidence = {"code": "hash_mismatch"}
        self._try(
            S.INTEGRITY_FAILED, lambda: self.w.coord.remote_integrity_failed(self._id, evidence, [b"x"])
        )

    @rule(files=st.integers(0, 2))
    def indeterminate(self, files: int) -> None:
        result = _result(TaskState.COMPLETED, files)
        self._try(
            S.INDETERMINATE, lambda: self.w.coord.remote_indeterminate(self._id, "missing_artifacts", result)
        )

    @rule(decision=st.sampled_from(["finalize", "reject"]))
    def review(self, decision: str) -> None:
        before = self.state
        dst = S.REJECTED if decision == "reject" else None
        call = lambda: self.w.coord.review_remote(self.w.admin, self._id, decision)  # noqa: E731
        self._try(dst, call, only_from=S.INDETERMINATE)
        if before is S.INDETERMINATE and decision == "finalize":
            assert self.state in (S.FINALIZED, S.REFUSED)

    @precondition(lambda self: self.state is not None and not self.state.final)
    @rule()
    def reassign_locally(self) -> None:
        task = self.w.coord.task_view(self.w.admin, self.task.id).task
        if task.active:
            self.w.coord.reassign(self.w.admin, self.task.id, self.w.agent.id)
            self.superseded = True

    @precondition(lambda self: self.state is not None and self.state.final)
    @rule()
    def delegate_again(self) -> None:
        task = self.w.coord.task_view(self.w.admin, self.task.id).task
        if task.status is TaskStatus.OPEN:
            self._delegate()

    @invariant()
    def agrees_with_the_model(self) -> None:
        if self.d is None:
            return
        c, w = self.w.coord, self.w
        assert c.remote_state(self._id).state is self.state
        events = c.events(w.admin, w.project_id, limit=1000)
        assert sum(e.kind == "a2a.remote.state" for e in events) == self.edges
        accepted = sum(e.kind == "completion.accepted" for e in events)
        assert accepted == self.finalized <= 1
        status = c.task_view(w.admin, self.task.id).task.status
        assert (status is TaskStatus.COMPLETED) == (self.finalized == 1)


TestDelegationStateful = DelegationMachine.TestCase
TestDelegationStateful.settings = settings(
    max_examples=20, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class PostgresDelegationMachine(OnFreshPostgres, DelegationMachine):
    """The same machine on a fresh PostgreSQL database per example."""


class TestDelegationStatefulPostgres(PostgresDelegationMachine.TestCase):  # type: ignore[misc,valid-type]
    settings = settings(
        max_examples=8, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )

    def setUp(self) -> None:
        PostgresDelegationMachine.server = server_url()  # skips with a message without PostgreSQL
