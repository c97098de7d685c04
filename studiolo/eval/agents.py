"""Scripted agents, pinned by `AGENT_VERSION` and the cell's seed (docs/evaluation.md).

An agent claims the next open task, checks it out (reads its targets and, by the cell's
read policy, what it declares to depend on), makes the real edit (the commit's diff
re-applied by git's three-way merge on the bytes it read), submits a candidate, waits for
the verifier's receipts, and asks for completion; after a refusal it recovers by the
refusal's reason (rebase, wait, claim again, re-read the contract) up to a bound.

A profile changes one thing, once per task: `forget-dependency` declares no reads;
`other-bytes` has a draft verified, then submits other bytes citing the draft's receipts;
`pause-past-lease` stops heartbeating past its lease before completing; `stale-checkout`
waits after its checkout so others land first; `honest` does none of these.  No language
model runs: these are our scripts of behaviours a real fleet shows.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from studiolo._exceptions import StudioloError
from studiolo.core.model import Attempt, Candidate, Principal
from studiolo.eval.workload import EvalTask, apply_change

if TYPE_CHECKING:
    from studiolo.eval.cell import Cell

__all__ = ["AGENT_VERSION", "PROFILES", "Agent", "Work"]

AGENT_VERSION = "studiolo-eval-agents/1"
PROFILES = ("honest", "forget-dependency", "other-bytes", "pause-past-lease", "stale-checkout")
MAX_RECOVERIES = 8
STALE_WAIT_TURNS = 8
PAUSE_TURNS = 14  # 70 s of the authority's clock: past a 60 s lease
WAIT_LIMIT = 40  # turns an agent waits for receipts before it resubmits


@dataclass
class Work:
    task: EvalTask
    task_id: str
    profile: str
    attempt: Attempt | None = None
    contract_hash: str = ""
    checkout: dict[str, tuple[int, bytes | None]] = field(default_factory=dict)
    reads: dict[str, int] = field(default_factory=dict)
    read_seqs: dict[str, int] = field(default_factory=dict)  # path or prefix → trace seq of the read
    collections: dict[str, int] = field(default_factory=dict)
    candidate: Candidate | None = None
    files: dict[str, bytes | None] = field(default_factory=dict)
    draft: Candidate | None = None
    cite: tuple[str, ...] = ()
    step: str = "checkout"
    waited: int = 0
    recoveries: int = 0
    requests: int = 0
    quirk_used: bool = False
    claimed_t: float = 0.0


class Agent:
    def __init__(self, name: str, principal: Principal, cell: Cell, seed: int) -> None:
        self.name = name
        self.principal = principal
        self.cell = cell
        self.rng = random.Random(f"{AGENT_VERSION}:{name}:{seed}")
        self.work: Work | None = None
        self.inbox: list[tuple[int, Attempt]] = []  # reassigned to this agent: (task index, attempt)
        self.given_up: set[int] = set()
        self.sleep = 0
        self.paused = False

    # the turn ---------------------------------------------------------------
    def act(self) -> None:
        if self.sleep > 0:
            self.sleep -= 1
            if not self.paused:
                self._heartbeat()
            return
        self.paused = False
        if self.work is None:
            self._take()
            return
        self._heartbeat()
        step = self.work.step
        if step == "checkout":
            self._checkout()
        elif step == "edit":
            self._edit()
        elif step == "wait":
            self._wait()
        elif step == "preflight":
            self._preflight()
        elif step == "commit":
            self._commit()

    @property
    def busy(self) -> bool:
        return self.work is not None or bool(self.inbox)

    # taking work ------------------------------------------------------------
    def _take(self) -> None:
        cell = self.cell
        if self.inbox:
            index, attempt = self.inbox.pop(0)
            self._start(index, attempt)
            return
        for index in cell.open_tasks():
            if index in self.given_up:
                continue
            try:
                attempt = cell.door.claim(self.principal, cell.world.tasks[index].id, cell.lease)
            except StudioloError:
                continue
            cell.record_attempt(self.name, index, attempt, "claim")
            self._start(index, attempt)
            return

    def _start(self, index: int, attempt: Attempt) -> None:
        task = self.cell.workload.tasks[index]
        profile = self.cell.profile_of(index)
        self.work = Work(
            task, self.cell.world.tasks[index].id, profile, attempt, claimed_t=self.cell.trace.now()
        )
        self.work.contract_hash = self.cell.contract_hash(self.principal, self.work.task_id)

    def _heartbeat(self) -> None:
        work = self.work
        if work is None or work.attempt is None:
            return
        try:
            attempt = self.cell.door.heartbeat(self.principal, work.attempt.id, self.cell.lease)
        except StudioloError:
            return  # the lease ran out or the task moved: the completion will say so
        self.cell.trace.emit(
            "heartbeat",
            attempt=self.cell.trace.name(attempt.id),
            deadline=self.cell.since(attempt.lease_deadline),
        )

    # checkout and edit --------------------------------------------------------
    def _checkout(self) -> None:
        work = self.work
        assert work is not None
        forget = work.profile == "forget-dependency" and not work.quirk_used
        work.checkout, work.reads, work.collections, work.read_seqs = self.cell.checkout(
            self.name, self.principal, work.task, declare=not forget
        )
        work.step = "edit"
        if work.profile == "stale-checkout" and not work.quirk_used:
            work.quirk_used = True
            self.sleep = STALE_WAIT_TURNS

    def _edit(self) -> None:
        work = self.work
        assert work is not None
        files: dict[str, bytes | None] = {}
        for path in work.task.paths:
            merged = apply_change(work.task.before[path], work.task.after[path], work.checkout[path][1])
            if merged is False:
                self._recover("edit_conflict")
                return
            files[path] = merged if not isinstance(merged, bool) else None
        if work.profile == "other-bytes" and not work.quirk_used and work.draft is None:
            draft: dict[str, bytes | None] = {p: b for p, (_r, b) in work.checkout.items() if b is not None}
            if draft and draft != files:
                work.draft = self.cell.submit(self.name, self.principal, work, draft)
                work.step = "wait"
                return
        work.files = files
        work.candidate = self.cell.submit(self.name, self.principal, work, files)
        if work.candidate is None:
            self._recover("candidate_refused")
            return
        if work.draft is not None and not work.quirk_used:
            work.quirk_used = True
            work.cite = self.cell.passing_receipts(self.principal, work.draft, work.contract_hash)
            work.step = "preflight"  # cites the draft's receipts without waiting for its own
            return
        work.step = "wait"
        work.waited = 0

    # evidence, preflight, commit ----------------------------------------------
    def _wait(self) -> None:
        work = self.work
        assert work is not None
        target = work.draft if work.candidate is None else work.candidate
        assert target is not None
        done, failed = self.cell.receipts_for(self.principal, target, work.contract_hash)
        if failed:
            if work.candidate is None:  # a failing draft: make the real edit anyway
                work.step = "edit"
                return
            self._recover("suite_failed")
            return
        if not done:
            work.waited += 1
            if work.waited > WAIT_LIMIT:
                self._recover("no_receipts")
            return
        if work.candidate is None:
            work.step = "edit"  # the draft is verified: now the real edit
            return
        work.cite = done
        work.step = "preflight"
        if work.profile == "pause-past-lease" and not work.quirk_used:
            work.quirk_used = True
            self.sleep, self.paused = PAUSE_TURNS, True

    def _preflight(self) -> None:
        work = self.work
        assert work is not None
        self.cell.preflight(self.name, self.principal, work)
        work.step = "commit"

    def _commit(self) -> None:
        work = self.work
        assert work is not None
        failed = self.cell.commit(self.name, self.principal, work)
        if not failed:
            self.work = None
            return
        reason = failed[0].removeprefix("preflight: ")
        self._recover(reason)

    # recovery -----------------------------------------------------------------
    def _recover(self, reason: str) -> None:
        work = self.work
        assert work is not None
        if reason in ("task_not_active", "attempt_superseded", "caller_not_attempt_owner", "task_not_found"):
            self._give_up(reason, release=False)
            return
        work.recoveries += 1
        if work.recoveries > MAX_RECOVERIES:
            self._give_up(f"{reason} (after {MAX_RECOVERIES} recoveries)", release=True)
            return
        action = self._recovery_action(reason)
        self.cell.trace.emit(
            "recovery", agent=self.name, task=work.task.index, reason=reason, action=action, n=work.recoveries
        )

    def _recovery_action(self, reason: str) -> str:
        work = self.work
        assert work is not None
        if reason == "lease_expired":
            try:
                attempt = self.cell.door.claim(self.principal, work.task_id, self.cell.lease)
            except StudioloError as refused:
                self._give_up(f"claim again: {refused.reason}", release=False)
                return "gave up"
            self.cell.record_attempt(self.name, work.task.index, attempt, "reclaim")
            work.attempt = attempt
            work.step = "edit"  # a candidate belongs to its attempt: submit the same change again
            return "claim again, resubmit"
        if reason in ("not_authorized", "pinned policy is not the latest"):
            self.sleep = 3
            work.step = "preflight"
            return "wait, ask again"
        if reason in ("evidence_missing", "evidence_not_bound", "evidence_untrusted", "no_receipts"):
            work.step = "wait"
            work.waited = 0
            if reason == "no_receipts":
                work.step = "edit"
            return "wait for its own receipts"
        if reason == "contract_mismatch":
            work.contract_hash = self.cell.contract_hash(self.principal, work.task_id)
            work.step = "edit"
            return "re-read the contract, resubmit"
        if reason in ("suite_failed", "evidence_failed"):
            self.sleep = 4
        work.step = "checkout"  # dependency_stale, target_base_stale, conflicts, failures: rebase
        return "rebase on the current tree"

    def _give_up(self, why: str, *, release: bool) -> None:
        work = self.work
        assert work is not None
        self.cell.trace.emit("gave-up", agent=self.name, task=work.task.index, why=why)
        if release and work.attempt is not None:
            with contextlib.suppress(StudioloError):
                self.cell.door.release(self.principal, work.attempt.id)
        self.given_up.add(work.task.index)
        self.work = None
