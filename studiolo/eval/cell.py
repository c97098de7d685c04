"""One cell: a mechanism × a declared-read policy × a seed, run on a branch of the world.

Each turn the authority's clock moves 5 s; the authority script acts at its turns; then the
agents and the verifier act once each, in an order drawn from the seed.  The harness keeps
what no agent sees: the adjudicated bytes, the suite on the branch after every acceptance,
and a mirror of the tree it checks against the ledger at the end.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from studiolo._exceptions import NotFound, StudioloError
from studiolo.core.model import Attempt, Candidate, Principal
from studiolo.eval.agents import AGENT_VERSION, PROFILES, Agent, Work
from studiolo.eval.authority import Authority
from studiolo.eval.mechanisms import Mechanism
from studiolo.eval.suite import Suite
from studiolo.eval.trace import Trace
from studiolo.eval.workload import Workload, apply_change, opened_files
from studiolo.eval.world import AGENTS, LEASE_SECONDS, World
from studiolo.service import CandidateDraft, make_request
from studiolo.verifier import InProcessPort, Runner

__all__ = ["READ_POLICIES", "Cell", "CellSpec", "run_cell"]

READ_POLICIES = ("written", "opened", "package")
TICK_SECONDS = 5.0
MAX_TURNS = 400


@dataclass(frozen=True)
class CellSpec:
    mechanism: str
    read_policy: str
    seed: int
    quiescent: bool = False  # no authority script and honest agents: falsification condition 4

    @property
    def key(self) -> str:
        q = "-quiescent" if self.quiescent else ""
        return f"{self.mechanism}/{self.read_policy}/seed-{self.seed}{q}"

    def to_json(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "read_policy": self.read_policy,
            "seed": self.seed,
            "quiescent": self.quiescent,
        }


class Cell:
    def __init__(
        self, world: World, workload: Workload, spec: CellSpec, suite: Suite, runner_opts: dict[str, Any]
    ) -> None:
        self.world = world
        self.workload = workload
        self.spec = spec
        self.suite = suite
        self.lease = LEASE_SECONDS
        self.trace = Trace(world.clock)
        self.start = world.clock()
        self.door = world.coordinator(f"cell:{spec.key}:door")
        self.mechanism = Mechanism(world, spec.mechanism, f"cell:{spec.key}")
        self.rng = random.Random(f"studiolo-eval-cell:{spec.seed}")
        self.profiles = _profiles(len(workload.tasks), spec)
        self.completed: set[int] = set()
        self.mirror: dict[str, bytes] = dict(workload.base_files)
        self.blob_bytes = 0
        self.log_bytes = 0
        port = InProcessPort(world.coordinator(f"cell:{spec.key}:verifier"), world.verifier, world.project_id)
        self.runner = Runner(port, world.verifier_key, clock=world.clock, **runner_opts)
        self.verifier_down = False
        self.agents = {n: Agent(n, world.agents[n], self, spec.seed) for n in AGENTS}
        self.authority = Authority(self, spec.seed, enabled=not spec.quiescent)
        self.first_seq = self._last_seq(0)

    # the loop -----------------------------------------------------------------
    def run(self) -> list[dict[str, Any]]:
        self._header()
        for turn in range(1, MAX_TURNS + 1):
            self.trace.turn = turn
            self.world.clock.advance(TICK_SECONDS)
            self.authority.act(turn)
            actors: list[Callable[[], None]] = [a.act for a in self.agents.values()] + [self._verify]
            self.rng.shuffle(actors)
            for act in actors:
                act()
            if self._finished():
                break
        self._final()
        return self.trace.records

    def _finished(self) -> bool:
        if len(self.completed) == len(self.workload.tasks):
            return True
        if any(a.busy or a.sleep for a in self.agents.values()) or self.authority.pending:
            return False
        open_ = set(self.open_tasks())
        return all(open_ <= a.given_up for a in self.agents.values())

    def _header(self) -> None:
        w = self.world
        self.trace.emit(
            "header",
            cell=self.spec.to_json(),
            agents=AGENT_VERSION,
            profiles=self.profiles,
            checker={"suite@1": list(w.checker_argv)},
            lease_seconds=self.lease,
            tick_seconds=TICK_SECONDS,
            workload=self.workload.pins(),
        )
        for name, principal in w.agents.items():
            self.trace.emit("principal", name=name, principal=self.trace.name(principal.id))
            self.trace.emit(
                "grant", principal=self.trace.name(principal.id), grant=self.trace.name(w.work_grants[name])
            )
        self.trace.emit("principal", name="ci", principal=self.trace.name(w.verifier.id), verifier=True)
        self.trace.emit("import", paths=sorted(self.workload.base_files))
        for index, task in enumerate(w.tasks):
            self.trace.emit(
                "task",
                task=self.trace.name(task.id),
                index=index,
                commit=self.workload.tasks[index].commit,
                scope=list(task.contract.scope),
                criteria={c.id: c.checker for c in task.contract.criteria},
                contract=task.contract_hash,
                policy=task.contract.policy_version,
            )

    # what agents call ---------------------------------------------------------
    def open_tasks(self) -> list[int]:
        return [i for i in range(len(self.workload.tasks)) if i not in self.completed]

    def profile_of(self, index: int) -> str:
        return self.profiles[index]

    def since(self, at: float) -> float:
        return round(at - self.start, 3)

    def contract_hash(self, caller: Principal, task_id: str) -> str:
        return self.door.task_view(caller, task_id).task.contract_hash

    def record_attempt(self, agent: str, index: int, attempt: Attempt, how: str) -> None:
        self.trace.emit(
            "attempt",
            how=how,
            agent=agent,
            task=self.trace.name(attempt.task_id),
            attempt=self.trace.name(attempt.id),
            principal=self.trace.name(attempt.principal_id),
            fence=attempt.fence,
            deadline=self.since(attempt.lease_deadline),
        )

    def checkout(
        self, agent: str, caller: Principal, task: Any, *, declare: bool
    ) -> tuple[dict[str, tuple[int, bytes | None]], dict[str, int], dict[str, int], dict[str, int]]:
        """Read the targets and what the read policy declares; every read is traced."""
        pid, door = self.world.project_id, self.door
        got: dict[str, tuple[int, bytes | None]] = {}
        seqs: dict[str, int] = {}
        for path in task.paths:
            got[path] = self._read(caller, path)
            seqs[path] = self.trace.emit("read", agent=agent, path=path, revision=got[path][0], target=True)[
                "seq"
            ]
        reads: dict[str, int] = {}
        collections: dict[str, int] = {}
        policy = self.spec.read_policy if declare else "none"
        if policy == "opened":
            contents = {p: b for p, (_r, b) in got.items() if b is not None}
            for path in opened_files(task.paths, contents, set(self.mirror)):
                reads[path] = self._read(caller, path)[0]
                seqs[path] = self.trace.emit("read", agent=agent, path=path, revision=reads[path])["seq"]
        elif policy == "package":
            for prefix in sorted({p.rsplit("/", 1)[0] + "/" for p in task.paths if "/" in p}):
                collections[prefix] = door.collection_revision(caller, pid, prefix)
                seqs[prefix] = self.trace.emit(
                    "collection", agent=agent, prefix=prefix, revision=collections[prefix]
                )["seq"]
        return got, reads, collections, seqs

    def _read(self, caller: Principal, path: str) -> tuple[int, bytes | None]:
        try:
            content = self.door.read_artifact(caller, self.world.project_id, path)
        except NotFound:
            return 0, None
        return content.artifact.revision, content.data

    def submit(
        self, agent: str, caller: Principal, work: Work, files: dict[str, bytes | None]
    ) -> Candidate | None:
        assert work.attempt is not None
        digests: dict[str, str | None] = {}
        for path, data in sorted(files.items()):
            if data is None:
                digests[path] = None
                continue
            digests[path] = self.door.put_blob(caller, data)
            self.blob_bytes += len(data)
        bases = {p: work.checkout[p][0] for p in files}
        draft = CandidateDraft(digests, bases, dict(work.reads), dict(work.collections))
        try:
            cand = self.door.submit_candidate(caller, work.attempt.id, draft)
        except StudioloError as refused:
            self.trace.emit("candidate-refused", agent=agent, task=work.task.index, reason=refused.reason)
            return None
        t = self.trace
        t.emit(
            "candidate",
            agent=agent,
            task=t.name(cand.task_id),
            attempt=t.name(cand.attempt_id),
            candidate=t.name(cand.id),
            digest=cand.digest,
            dependency_digest=cand.dependency_digest,
            files={p: _sha(b) for p, b in sorted(files.items())},
            bases=dict(cand.bases),
            reads={p: [r, work.read_seqs[p]] for p, r in sorted(cand.file_deps.items())},
            collections={p: [r, work.read_seqs[p]] for p, r in sorted(cand.collection_deps.items())},
            base_seqs={p: work.read_seqs[p] for p in sorted(cand.bases)},
        )
        return cand

    def receipts_for(self, caller: Principal, cand: Candidate, contract: str) -> tuple[tuple[str, ...], bool]:
        """The candidate's receipts under `contract`: (passing ids when every criterion has
        one, else ()), and whether any failed."""
        found = [r for r in self.door.receipts(caller, cand.id) if r.contract_hash == contract]
        failed = any(r.result.value == "fail" for r in found)
        passing = {r.criterion: r.id for r in found if r.result.value == "pass"}
        task = self.door.task_view(caller, cand.task_id).task
        wanted = [c.id for c in task.contract.criteria]
        if all(c in passing for c in wanted):
            return tuple(passing[c] for c in wanted), failed
        return (), failed

    def passing_receipts(self, caller: Principal, cand: Candidate, contract: str) -> tuple[str, ...]:
        return tuple(
            r.id
            for r in self.door.receipts(caller, cand.id)
            if r.contract_hash == contract and r.result.value == "pass"
        )

    def _request(self, agent: str, work: Work) -> Any:
        assert work.attempt is not None and work.candidate is not None
        work.requests += 1
        return make_request(
            request_id=f"{agent}-{work.task.index}-{work.requests}",
            task_id=work.task_id,
            attempt_id=work.attempt.id,
            fence=work.attempt.fence,
            contract_hash=work.contract_hash,
            candidate_id=work.candidate.id,
            evidence=work.cite,
        )

    def preflight(self, agent: str, caller: Principal, work: Work) -> None:
        request = self._request(agent, work)
        work.requests -= 1  # the commit sends the same request id
        verdict = self.mechanism.preflight(caller, request)
        self.trace.emit("preflight", agent=agent, task=work.task.index, verdict=list(verdict) or ["accepted"])

    def commit(self, agent: str, caller: Principal, work: Work) -> tuple[str, ...]:
        assert work.candidate is not None
        request = self._request(agent, work)
        current = {p: self.mirror.get(p) for p in work.task.paths}  # the harness's view, not the agent's
        adjudicated = {
            p: apply_change(work.task.before[p], work.task.after[p], current[p]) for p in work.task.paths
        }
        wall = time.perf_counter()
        decision = self.mechanism.commit(caller, request, self.door)
        t = self.trace
        record = t.emit(
            "decision",
            agent=agent,
            mechanism=self.spec.mechanism,
            caller=t.name(caller.id),
            task=t.name(work.task_id),
            index=work.task.index,
            request=request.request_id,
            attempt=t.name(request.attempt_id),
            fence=request.fence,
            contract=request.contract_hash,
            candidate=t.name(request.candidate_id),
            evidence=t.names(request.evidence),
            accepted=decision.accepted,
            failed=list(decision.failed),
            timing={"door_ms": round(decision.seconds * 1000, 3)},
        )
        if decision.accepted:
            self._accepted(work, record, adjudicated, wall)
        return decision.failed

    def _accepted(self, work: Work, record: dict[str, Any], adjudicated: dict[str, Any], wall: float) -> None:
        assert work.candidate is not None
        self.completed.add(work.task.index)
        for path, data in sorted(work.files.items()):
            if data is None:
                self.mirror.pop(path, None)
            else:
                self.mirror[path] = data
            revision = self.door.read_revision(self.world.admin, self.world.project_id, path)
            self.trace.emit("write", path=path, by="completion", digest=_sha(data), revision=revision)
        record["adjudicated"] = all(
            adjudicated[p] is not False and adjudicated[p] == work.files.get(p) for p in work.task.paths
        )
        record["e2e_s"] = round(self.trace.now() - work.claimed_t, 3)
        record["git_objects"] = _git_objects(work.files)
        passed = self.suite.passes(self.mirror)
        self.trace.emit(
            "suite",
            after=record["seq"],
            passed=passed,
            timing={"e2e_wall_s": round(time.perf_counter() - wall, 3)},
        )

    # the verifier ---------------------------------------------------------------
    def _verify(self) -> None:
        if self.verifier_down:
            return
        for item in self.runner.run_once():
            if item.receipt_id is None:
                self.trace.emit(
                    "verifier-error", candidate=self.trace.name(item.candidate_id), status=item.status
                )
                continue
            r = self.door.receipt(self.world.admin, item.receipt_id)
            if r.log_digest:
                self.log_bytes += len(self.door.get_blob(self.world.admin, r.log_digest))
            t = self.trace
            t.emit(
                "receipt",
                receipt=t.name(r.id),
                issuer=t.name(r.issuer_id),
                task=t.name(r.task_id),
                attempt=t.name(r.attempt_id),
                candidate=t.name(r.candidate_id),
                candidate_digest=r.candidate_digest,
                dependency_digest=r.dependency_digest,
                contract=r.contract_hash,
                criterion=r.criterion,
                checker=r.checker,
                result=r.result.value,
                timing={"check_s": round(item.seconds, 3)},
            )

    # the end --------------------------------------------------------------------
    def _final(self) -> None:
        arts = self.door.list_artifacts(self.world.admin, self.world.project_id)
        ledger = {a.path: a.digest for a in arts if a.digest is not None}
        mirror = {p: "sha256:" + hashlib.sha256(b).hexdigest() for p, b in self.mirror.items()}
        events = self._audit_events()
        self.trace.emit(
            "final",
            completed=sorted(self.completed),
            mirror_matches_ledger=ledger == mirror,
            suite_passes=self.suite.passes(self.mirror),
            candidate_bytes=self.blob_bytes,
            log_bytes=self.log_bytes,
            audit_events=events,
        )

    def _audit_events(self) -> int:
        """The audit events this cell appended (the project's chain)."""
        n, after = 0, self.first_seq
        while True:
            batch = self.door.events(self.world.admin, self.world.project_id, after=after, limit=200)
            if not batch:
                return n
            n += len(batch)
            after = batch[-1].seq

    def _last_seq(self, after: int) -> int:
        while True:
            batch = self.door.events(self.world.admin, self.world.project_id, after=after, limit=200)
            if not batch:
                return after
            after = batch[-1].seq


def _sha(data: bytes | None) -> str | None:
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def _git_objects(files: dict[str, bytes | None]) -> int:
    """Objects one publication writes (the projector's rule, docs/git.md): a blob per written
    file, a tree per directory on the changed paths plus the root, the commit, and the note's
    blob, tree and commit."""
    dirs = {p.rsplit("/", n)[0] for p in files for n in range(1, p.count("/") + 1)}
    return sum(1 for d in files.values() if d is not None) + len(dirs) + 1 + 1 + 3


def _profiles(n: int, spec: CellSpec) -> list[str]:
    if spec.quiescent:
        return ["honest"] * n
    rng = random.Random(f"studiolo-eval-profiles:{spec.seed}")
    cycle = list(PROFILES)
    rng.shuffle(cycle)
    return [cycle[i % len(cycle)] for i in range(n)]


def run_cell(
    world: World, workload: Workload, spec: CellSpec, suite: Suite, runner_opts: dict[str, Any]
) -> list[dict[str, Any]]:
    """Run one cell on a branch of the world (rolled back after) and return its trace."""
    with world.store.branch():
        return Cell(world, workload, spec, suite, runner_opts).run()
