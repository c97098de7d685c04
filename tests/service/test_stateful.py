"""The SQL ledger against a small in-memory model, over random sequences of claims,
heartbeats, edits, revocations, reassignments, policy publications, receipts and
completion requests. The model decides every completion on its own (it does not call the
predicate), so a bug in the store, the facts gathering or the predicate shows up as a
disagreement."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from studiolo import CompletionRejected, Conflict, NotAuthorized
from studiolo.core.model import Attempt, Candidate, Principal, Task
from tests.store.pgdb import OnFreshPostgres, server_url
from tests.world import FakeClock, World, build_world

LEASE = 60.0
_ids = itertools.count(1)


@dataclass
class MAttempt:
    id: str
    owner: str
    fence: int
    deadline: float
    status: str = "active"


@dataclass
class MTask:
    task: Task
    target: str
    status: str = "open"
    current: str | None = None
    fence: int = 0
    completions: int = 0


@dataclass
class MCand:
    cand: Candidate
    task_id: str
    attempt_id: str
    content: bytes
    base: int
    dep: int


@dataclass
class MReceipt:
    id: str
    task_id: str
    attempt_id: str
    key: tuple[bytes, int, int]  # (content, base, dep) ≙ candidate digest + dependency digest
    passed: bool


@dataclass
class Model:
    now: float
    revs: dict[str, int]
    grant_live: dict[str, bool]
    tasks: dict[str, MTask] = field(default_factory=dict)
    attempts: dict[str, MAttempt] = field(default_factory=dict)
    requests: dict[str, tuple[tuple[object, ...], str]] = field(default_factory=dict)

    def live(self, a: MAttempt) -> bool:
        return a.status == "active" and self.now < a.deadline

    def verdict(
        self, caller: str, t: MTask, a: MAttempt, c: MCand, ev: list[MReceipt], recorded: list[MReceipt]
    ) -> list[str]:
        f = []
        if t.status not in ("open", "claimed"):
            f.append("task_not_active")
        if a.owner != caller:
            f.append("caller_not_attempt_owner")
        if t.current != a.id or a.status != "active":
            f.append("attempt_superseded")
        if self.now >= a.deadline:
            f.append("lease_expired")
        if c.attempt_id != a.id:
            f.append("candidate_not_bound")
        if not self.grant_live[caller]:
            f.append("not_authorized")
        if self.revs["src/input.txt"] != c.dep:
            f.append("dependency_stale")
        if self.revs[t.target] != c.base:
            f.append("target_base_stale")
        key = (c.content, c.base, c.dep)
        bound = [r for r in ev if r.key == key and r.attempt_id == a.id and r.task_id == t.task.id]
        if len(bound) != len(ev):
            f.append("evidence_not_bound")
        if not bound:
            f.append("evidence_missing")
        # every receipt recorded for these bytes counts, cited or not: a fail stands
        same = [r for r in recorded if r.key == key and r.attempt_id == a.id and r.task_id == t.task.id]
        if not all(r.passed for r in bound + same):
            f.append("evidence_failed")
        return f


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="studiolo-stateful-"))
        self.clock = FakeClock()
        self.w: World = build_world(self.tmp, self.clock, url=self.database_url())
        self.agents: dict[str, Principal] = {"a": self.w.agent, "b": self.w.agent2}
        self.m = Model(
            self.clock(), {"src/input.txt": 1, "src/out0.txt": 0, "src/out1.txt": 0}, {"a": True, "b": True}
        )
        self.cands: list[MCand] = []
        self.receipts: list[MReceipt] = []
        self.real_attempts: dict[str, Attempt] = {}

    def database_url(self) -> str | None:
        return None  # a SQLite file in self.tmp

    def teardown(self) -> None:
        self.w.coord.store.dispose()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @initialize()
    def tasks(self) -> None:
        for k in range(2):
            task = self.w.new_task(f"task {k}")
            self.m.tasks[task.id] = MTask(task, f"src/out{k}.txt")

    def _task(self, k: int) -> MTask:
        return list(self.m.tasks.values())[k]

    @rule(k=st.integers(0, 1), who=st.sampled_from("ab"))
    def claim(self, k: int, who: str) -> None:
        t = self._task(k)
        cur = self.m.attempts.get(t.current or "")
        ok = t.status in ("open", "claimed") and (cur is None or not self.m.live(cur))
        try:
            a = self.w.coord.claim(self.agents[who], t.task.id, LEASE)
        except Conflict:
            assert not ok
            return
        except NotAuthorized:
            assert not self.m.grant_live[who]
            return
        assert ok and self.m.grant_live[who]
        self._adopt(t, a, who)

    def _adopt(self, t: MTask, a: Attempt, who: str) -> None:
        if t.current:
            self.m.attempts[t.current].status = "superseded"
        t.fence += 1
        assert a.fence == t.fence
        t.current, t.status = a.id, "claimed"
        self.m.attempts[a.id] = MAttempt(a.id, who, a.fence, self.m.now + LEASE)
        self.real_attempts[a.id] = a

    @rule(k=st.integers(0, 1), who=st.sampled_from("ab"))
    def reassign(self, k: int, who: str) -> None:
        t = self._task(k)
        try:
            a = self.w.coord.reassign(self.w.admin, t.task.id, self.agents[who].id, LEASE)
        except Conflict:
            assert t.status not in ("open", "claimed")
            return
        self._adopt(t, a, who)

    @rule(k=st.integers(0, 1))
    def heartbeat(self, k: int) -> None:
        t = self._task(k)
        if t.current is None:
            return
        a = self.m.attempts[t.current]
        ok = t.status == "claimed" and self.m.live(a)
        try:
            self.w.coord.heartbeat(self.agents[a.owner], a.id, LEASE)
        except Conflict:
            assert not ok
            return
        assert ok
        a.deadline = self.m.now + LEASE

    @rule(k=st.integers(0, 1))
    def release(self, k: int) -> None:
        t = self._task(k)
        if t.current is None or t.status != "claimed":
            return
        a = self.m.attempts[t.current]
        self.w.coord.release(self.agents[a.owner], a.id)
        a.status, t.status, t.current = "released", "open", None

    @rule(seconds=st.sampled_from([5.0, 30.0, 61.0]))
    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.m.now = self.clock()

    @rule(path=st.sampled_from(["src/input.txt", "src/out0.txt", "src/out1.txt"]))
    def edit(self, path: str) -> None:
        self.w.edit(path, f"edit {next(_ids)}".encode())
        self.m.revs[path] += 1

    @rule(who=st.sampled_from("ab"))
    def toggle_grant(self, who: str) -> None:
        key = "agent" if who == "a" else "agent2"
        if self.m.grant_live[who]:
            self.w.coord.revoke_grant(self.w.admin, self.w.grants[key])
        else:
            actions = ["write", "claim", "complete"]
            g = self.w.coord.grant(self.w.admin, self.w.project_id, self.agents[who].id, actions, ["src/**"])
            self.w.grants[key] = g.id
        self.m.grant_live[who] = not self.m.grant_live[who]

    @rule()
    def publish_policy(self) -> None:
        self.w.coord.publish_policy(self.w.admin, self.w.project_id, f"rules v{next(_ids)}")

    @rule(k=st.integers(0, 1), answer=st.sampled_from([b"42", b"43"]))
    def submit(self, k: int, answer: bytes) -> None:
        t = self._task(k)
        if t.current is None or t.status != "claimed":
            return
        a = self.m.attempts[t.current]
        real = self.real_attempts[a.id]
        dep = self.m.revs["src/input.txt"]
        c = self.w.candidate(real, {t.target: answer}, deps={"src/input.txt": dep}, who=self.agents[a.owner])
        self.cands.append(MCand(c, t.task.id, a.id, answer, self.m.revs[t.target], dep))

    @precondition(lambda self: bool(self.cands))
    @rule(data=st.data(), passed=st.booleans())
    def verify(self, data: st.DataObject, passed: bool) -> None:
        c = data.draw(st.sampled_from(self.cands))
        r = self.w.receipt(c.cand, "pass" if passed else "fail")
        key = (c.content, c.base, c.dep)
        if all(x.id != r.id for x in self.receipts):
            self.receipts.append(MReceipt(r.id, c.task_id, c.attempt_id, key, passed))

    @precondition(lambda self: bool(self.cands))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        c = data.draw(st.sampled_from(self.cands[-3:]))  # mostly recent work
        t, a = self.m.tasks[c.task_id], self.m.attempts[c.attempt_id]
        other = "b" if a.owner == "a" else "a"
        who = data.draw(st.sampled_from([a.owner, a.owner, a.owner, other]))
        own = [r for r in self.receipts if r.key == (c.content, c.base, c.dep) and r.passed]
        same_task = [r for r in self.receipts if r.task_id == c.task_id]
        pools = [st.just(own[-1:])] if own else []
        if same_task:
            pools.append(st.lists(st.sampled_from(same_task), max_size=2, unique_by=lambda r: r.id))
        ev = data.draw(st.one_of(*pools)) if pools else []
        expected = self.m.verdict(who, t, a, c, ev, self.receipts)
        rid = f"req-{next(_ids)}"
        try:
            out = self.w.complete(
                t.task,
                self.real_attempts[a.id],
                c.cand,
                [r.id for r in ev],
                who=self.agents[who],
                request_id=rid,
            )
        except CompletionRejected as err:
            assert list(err.failed) == expected, (err.failed, expected)
            event(f"rejected {err.reason}")
            return
        assert expected == [], expected
        event("accepted")
        assert not out.replay
        t.status, a.status, t.completions = "completed", "completed", t.completions + 1
        self.m.revs[t.target] += 1
        self.m.requests[rid] = ((c.cand.id, a.id, tuple(sorted(r.id for r in ev))), who)
        assert out.completion.revisions == {t.target: self.m.revs[t.target]}

    @rule(k=st.integers(0, 1), data=st.data())
    def finish(self, k: int, data: st.DataObject) -> None:
        """The usual path in one step: prepare bytes, verify them, ask for completion."""
        self.submit(k, data.draw(st.sampled_from([b"42", b"43"])))
        t = self._task(k)
        if not self.cands or self.cands[-1].task_id != t.task.id or t.status != "claimed":
            return
        c = self.cands[-1]
        r = self.w.receipt(c.cand, "pass")
        self.receipts.append(MReceipt(r.id, c.task_id, c.attempt_id, (c.content, c.base, c.dep), True))
        self.complete(data)

    @precondition(lambda self: bool(self.m.requests))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.m.requests)))
        (cand_id, att_id, ev), who = self.m.requests[rid]
        c = next(x for x in self.cands if x.cand.id == cand_id)
        t = self.m.tasks[c.task_id]
        out = self.w.complete(
            t.task, self.real_attempts[att_id], c.cand, list(ev), who=self.agents[who], request_id=rid
        )
        assert out.replay

    @invariant()
    def store_agrees(self) -> None:
        for t in self.m.tasks.values():
            real = self.w.coord.task_view(self.w.admin, t.task.id)
            assert real.task.status.value == t.status
            assert real.task.fence == t.fence
            assert real.task.current_attempt_id == t.current or t.status == "open"
            assert sum(1 for _ in [real.completion] if real.completion) == min(t.completions, 1)
            assert t.completions <= 1
        for path, rev in self.m.revs.items():
            assert self.w.coord.read_revision(self.w.admin, self.w.project_id, path) == rev


TestLedgerStateful = LedgerMachine.TestCase
TestLedgerStateful.settings = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class PostgresLedgerMachine(OnFreshPostgres, LedgerMachine):
    """The same machine on a fresh PostgreSQL database per example."""


class TestLedgerStatefulPostgres(PostgresLedgerMachine.TestCase):  # type: ignore[misc,name-defined]
    settings = settings(
        max_examples=15,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )

    def setUp(self) -> None:
        PostgresLedgerMachine.server = server_url()  # skips with a message without PostgreSQL
