"""`studiolo demo` (a scripted story in a temporary ledger) and the seed of `studiolo run`.

The story runs in-process against the Coordinator with an injected fake clock: two agents,
a verifier and a human editor. It shows one accepted completion and each kind of
rejection with its reason, and that a harmless policy publication is accepted.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rich.console import Console
from rich.table import Table

from studiolo._exceptions import CompletionRejected, Conflict
from studiolo.clock import ManualClock
from studiolo.core.canonical import digest_bytes
from studiolo.core.model import Attempt, Candidate, Principal, Task
from studiolo.keys import public_key_text, sign
from studiolo.service import CandidateDraft, Coordinator, Issued, make_request
from studiolo.settings import Settings
from studiolo.store import Store

__all__ = ["DemoProject", "FakeClock", "SceneResult", "run_story", "seed", "setup_project"]

POLICY = "Read before you write. Declare what you read. Never edit outside your task's scope."
WORKER_SCOPE = ("src/**", "docs/**")


FakeClock = ManualClock  # the story's authority clock, moved by hand


@dataclass
class DemoProject:
    """A project with two agents, a verifier (with its signing key), an editor and rules."""

    coord: Coordinator
    admin: Principal
    project_id: str
    issued: dict[str, Issued]
    verifier_key: Ed25519PrivateKey
    write_grants: dict[str, str] = field(default_factory=dict)

    def who(self, name: str) -> Principal:
        return self.issued[name].principal

    @property
    def tokens(self) -> dict[str, str]:
        return {name: i.token for name, i in self.issued.items()}


def setup_project(coord: Coordinator, admin: Principal, name: str = "demo") -> DemoProject:
    """Principals, grants (read/claim split from write/complete), a policy, a checker, files."""
    pid = coord.create_project(admin, name).id
    key = Ed25519PrivateKey.generate()
    issued = {
        "agent-a": coord.add_principal(admin, pid, "agent-a", "agent"),
        "agent-b": coord.add_principal(admin, pid, "agent-b", "agent"),
        "ci": coord.add_principal(admin, pid, "ci", "verifier", public_key_text(key)),
        "editor": coord.add_principal(admin, pid, "editor", "human"),
    }
    demo = DemoProject(coord, admin, pid, issued, key)
    for agent in ("agent-a", "agent-b"):
        coord.grant(admin, pid, demo.who(agent).id, ["read", "claim"], ["**"])
        g = coord.grant(admin, pid, demo.who(agent).id, ["write", "complete"], WORKER_SCOPE)
        demo.write_grants[agent] = g.id
    coord.grant(admin, pid, demo.who("ci").id, ["read", "verify"], ["**"])
    coord.grant(admin, pid, demo.who("editor").id, ["read", "write", "observe"], ["**"])
    coord.publish_policy(admin, pid, POLICY)
    coord.register_checker(
        admin, pid, "unit", "1", "command", {"argv": ["make", "test"]}, [demo.who("ci").id]
    )
    files = (("src/input.txt", DOUBLED_INPUT), ("src/answer.txt", b"0\n"), ("docs/README.md", b"# Demo\n"))
    for path, data in files:
        edit(demo, "editor", path, data)
    return demo


def edit(demo: DemoProject, who: str, path: str, data: bytes) -> int:
    coord, caller = demo.coord, demo.who(who)
    digest = coord.put_blob(caller, data)
    base = coord.read_revision(caller, demo.project_id, path)
    return coord.edit_artifact(caller, demo.project_id, path, digest, base).revision


def seed(coord: Coordinator, admin: Principal, name: str = "demo") -> tuple[DemoProject, list[Task]]:
    """The project `studiolo run` serves: the demo cast, three open tasks and an A2A intake.

    "Double the number" is checked the way a project with hostile agents should check: kind
    `outputs`, and a contract that requires a separate verdict, so the agent's bytes never
    run where the verdict is computed (docs/verifiers.md)."""
    demo = setup_project(coord, admin, name)
    ci = [demo.who("ci").id]
    for name, argv in SEED_CHECKERS.items():
        coord.register_checker(admin, demo.project_id, name, "1", "command", {"argv": argv}, ci)
    edit(demo, "editor", DOUBLED_ASSERTION, DOUBLED_CHECK)
    coord.register_checker(admin, demo.project_id, "doubled", "1", "outputs", doubled_config(), ci)
    specs = (
        ("Double the number", "Write twice src/input.txt into src/answer.txt.", ["src/**"], "doubled@1"),
        ("Document the answer", "Explain src/answer.txt in docs/README.md.", ["docs/**"], "documented@1"),
        ("Greet the reader", "Add src/hello.txt saying hello.", ["src/**"], "greeting@1"),
    )
    tasks = [
        coord.create_task(
            admin,
            demo.project_id,
            title,
            description=text,
            criteria={"tests": checker},
            scope=sc,
            separate_verdict=["tests"] if checker == "doubled@1" else [],
        )
        for title, text, sc, checker in specs
    ]
    _seed_delegation(demo)
    return demo, tasks


def _seed_delegation(demo: DemoProject) -> None:
    """A2A: a `requester` who may delegate work under src/, and the one skill it may ask for
    (so the served Agent Card lists a skill and a remote agent can hand work in)."""
    coord, admin, pid = demo.coord, demo.admin, demo.project_id
    demo.issued["requester"] = coord.add_principal(admin, pid, "requester", "agent")
    coord.grant(admin, pid, demo.who("requester").id, ["delegate"], ["src/**"])
    coord.define_intake(
        admin,
        pid,
        "greeting",
        description="Add src/hello.txt saying hello; done when the greeting check passes.",
        criteria={"tests": "greeting@1"},
        scope=["src/**"],
    )


# Real checks that `studiolo verifier run` executes on each candidate tree (kind `command`:
# the tree's bytes are data here, but the kind's verdict is `shared`).
SEED_CHECKERS: dict[str, list[str]] = {
    "documented": [
        "python3",
        "-c",
        "from pathlib import Path as P; t = P('docs/README.md').read_text(); "
        "raise SystemExit('answer' not in t.lower())",
    ],
    "greeting": ["grep", "-qi", "hello", "src/hello.txt"],
}

# `doubled@1` (kind `outputs`): stage 1 hands the candidate's answer over as an output; stage
# 2, in a sandbox with no candidate bytes, runs the pinned assertion on it against the pinned
# input. An agent that edits the assertion or the input fails the pinned digests.
DOUBLED_ASSERTION = "checks/doubled.py"
DOUBLED_CHECK = b"""\
import os, sys
from pathlib import Path

given = int(Path("src/input.txt").read_text())
answer = int((Path(os.environ["STUDIOLO_OUTPUTS"]) / "answer.txt").read_text())
print("input", given, "answer", answer)
sys.exit(answer != 2 * given)
"""
DOUBLED_INPUT = b"21\n"


def doubled_config() -> dict[str, object]:
    emit = "import os, shutil; shutil.copy('src/answer.txt', os.environ['STUDIOLO_OUTPUTS'])"
    return {
        "run": ["python3", "-c", emit],
        "assert": ["python3", DOUBLED_ASSERTION],
        "assertions": {
            DOUBLED_ASSERTION: digest_bytes(DOUBLED_CHECK),
            "src/input.txt": digest_bytes(DOUBLED_INPUT),
        },
        "timeout": 60,
    }


# the story -------------------------------------------------------------------------
@dataclass(frozen=True)
class SceneResult:
    title: str
    expected: str
    got: str
    failed: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.got == self.expected


class _Story:
    def __init__(self, demo: DemoProject, clock: FakeClock, console: Console) -> None:
        self.demo, self.clock, self.console = demo, clock, console
        self.coord = demo.coord
        self.results: list[SceneResult] = []
        self._n = 0

    def say(self, text: str) -> None:
        self.console.print(f"  {text}")

    def task(self, title: str, scope: tuple[str, ...] = ("src/**",)) -> Task:
        crit = {"tests": "unit@1"}
        return self.coord.create_task(
            self.demo.admin, self.demo.project_id, title, criteria=crit, scope=scope
        )

    def claim(self, task: Task, who: str, lease: float | None = None) -> Attempt:
        attempt = self.coord.claim(self.demo.who(who), task.id, lease)
        self.say(f"[cyan]{who}[/] claims it (attempt fence {attempt.fence})")
        return attempt

    def work(
        self, attempt: Attempt, who: str, files: Mapping[str, bytes], reads: tuple[str, ...]
    ) -> Candidate:
        caller, pid = self.demo.who(who), self.demo.project_id
        deps = {p: self.coord.read_revision(caller, pid, p) for p in reads}
        digests: dict[str, str | None] = {p: self.coord.put_blob(caller, b) for p, b in files.items()}
        bases = {p: self.coord.read_revision(caller, pid, p) for p in files}
        cand = self.coord.submit_candidate(caller, attempt.id, CandidateDraft(digests, bases, deps, {}))
        self.say(f"[cyan]{who}[/] read {', '.join(reads) or 'nothing'}; submits {', '.join(files)}")
        return cand

    def verify(self, cand: Candidate, result: str = "pass") -> str:
        task = self.coord.task_view(self.demo.admin, cand.task_id).task
        ci = self.demo.who("ci")
        body = {
            "task_id": cand.task_id,
            "attempt_id": cand.attempt_id,
            "contract_hash": task.contract_hash,
            "candidate_digest": cand.digest,
            "dependency_digest": cand.dependency_digest,
            "criterion": "tests",
            "checker": "unit@1",
            "result": result,
            "issued_at": int(self.clock() * 1000),
            "issuer": ci.id,
            "log_digest": None,
        }
        receipt = self.coord.submit_receipt(ci, cand.id, body, sign(self.demo.verifier_key, body))
        self.say(f"[magenta]ci[/] checks the exact bytes with unit@1: [bold]{result}[/]")
        return receipt.id

    def complete(
        self, task: Task, attempt: Attempt, cand: Candidate, ev: list[str], who: str
    ) -> tuple[str, ...]:
        self._n += 1
        q = make_request(
            request_id=f"demo-{self._n}",
            task_id=task.id,
            attempt_id=attempt.id,
            fence=attempt.fence,
            contract_hash=task.contract_hash,
            candidate_id=cand.id,
            evidence=ev,
        )
        try:
            out = self.coord.complete(self.demo.who(who), q)
        except CompletionRejected as exc:
            self.say(f"[red]rejected[/]: reason [bold]{exc.reason}[/]; failed {list(exc.failed)}")
            return exc.failed
        self.say(f"[green]accepted[/] at commit version {out.completion.commit_version}")
        return ()

    def scene(self, title: str, expected: str, play: Callable[[], tuple[str, ...]]) -> None:
        self.console.rule(f"[bold]{title}")
        failed = play()
        got = failed[0] if failed else "accepted"
        self.results.append(SceneResult(title, expected, got, failed))


def _accepted(st: _Story) -> tuple[str, ...]:
    t = st.task("Double the number")
    a = st.claim(t, "agent-a")
    c = st.work(a, "agent-a", {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    failed = st.complete(t, a, c, [st.verify(c)], "agent-a")
    st.say("the editor reads src/answer.txt: it now holds the accepted bytes")
    return failed


def _policy_published(st: _Story) -> tuple[str, ...]:
    t = st.task("Keep a changelog")
    a = st.claim(t, "agent-b")
    c = st.work(a, "agent-b", {"src/CHANGES.txt": b"- doubled\n"}, ())
    ev = [st.verify(c)]
    st.coord.publish_policy(st.demo.admin, st.demo.project_id, POLICY + " Be kind.")
    st.say("the admin publishes policy v2; the task stays pinned to v1")
    return st.complete(t, a, c, ev, "agent-b")


def _stale_dependency(st: _Story) -> tuple[str, ...]:
    t = st.task("Triple the number")
    a = st.claim(t, "agent-a")
    c = st.work(a, "agent-a", {"src/triple.txt": b"63\n"}, ("src/input.txt",))
    ev = [st.verify(c)]
    edit(st.demo, "editor", "src/input.txt", b"22\n")
    st.say("[yellow]editor[/] changes src/input.txt after agent-a read it")
    return st.complete(t, a, c, ev, "agent-a")


def _superseded(st: _Story) -> tuple[str, ...]:
    t = st.task("Halve the number")
    a = st.claim(t, "agent-a")
    c = st.work(a, "agent-a", {"src/half.txt": b"11\n"}, ())
    ev = [st.verify(c)]
    st.coord.reassign(st.demo.admin, t.id, st.demo.who("agent-b").id)
    st.say("the admin reassigns the task to agent-b; agent-a returns late")
    return st.complete(t, a, c, ev, "agent-a")


def _lease_expired(st: _Story) -> tuple[str, ...]:
    t = st.task("Square the number")
    a = st.claim(t, "agent-b", lease=60)
    c = st.work(a, "agent-b", {"src/square.txt": b"484\n"}, ())
    ev = [st.verify(c)]
    st.clock.advance(120)
    st.say("two minutes pass on the authority clock; the 60 s lease is over")
    return st.complete(t, a, c, ev, "agent-b")


def _scope_violation(st: _Story) -> tuple[str, ...]:
    t = st.task("Fix a typo in the source")
    a = st.claim(t, "agent-b")
    st.say("the contract's scope is src/**; agent-b submits docs/README.md")
    try:
        c = st.work(a, "agent-b", {"docs/README.md": b"# Demo!\n"}, ())
    except Conflict as refused:
        st.say("refused at submission: no verifier ever runs out-of-scope bytes")
        return (refused.reason,)
    return st.complete(t, a, c, [st.verify(c)], "agent-b")


def _evidence(result: str | None) -> Callable[[_Story], tuple[str, ...]]:
    def play(st: _Story) -> tuple[str, ...]:
        t = st.task(f"Negate the number ({result or 'no'} evidence)")
        a = st.claim(t, "agent-b")
        c = st.work(a, "agent-b", {"src/negative.txt": b"-22\n"}, ())
        return st.complete(t, a, c, [st.verify(c, result)] if result else [], "agent-b")

    return play


def _untrusted(st: _Story) -> tuple[str, ...]:
    t = st.task("Negate the number (untrusted evidence)")
    a = st.claim(t, "agent-b")
    c = st.work(a, "agent-b", {"src/negative.txt": b"-22\n"}, ())
    ev = [st.verify(c)]
    admin, pid, ci = st.demo.admin, st.demo.project_id, st.demo.who("ci").id
    st.coord.register_checker(admin, pid, "unit", "1", "command", {"argv": ["make", "test"]}, [])
    st.say("the admin withdraws ci's admission for unit@1 (say its key leaked) before the commit")
    failed = st.complete(t, a, c, ev, "agent-b")
    st.coord.register_checker(admin, pid, "unit", "1", "command", {"argv": ["make", "test"]}, [ci])
    return failed


def _revoked(st: _Story) -> tuple[str, ...]:
    t = st.task("Add one")
    a = st.claim(t, "agent-a")
    c = st.work(a, "agent-a", {"src/plus.txt": b"23\n"}, ())
    ev = [st.verify(c)]
    st.coord.revoke_grant(st.demo.admin, st.demo.write_grants["agent-a"])
    st.say("the admin revokes agent-a's write grant before the commit")
    failed = st.complete(t, a, c, ev, "agent-a")
    first = st.coord.list_tasks(st.demo.admin, st.demo.project_id, "completed")
    st.say(f"the revocation after earlier commits undoes none of them ({len(first)} still completed)")
    return failed


SCENES: tuple[tuple[str, str, Callable[[_Story], tuple[str, ...]]], ...] = (
    ("An accepted completion", "accepted", _accepted),
    ("A harmless policy publication", "accepted", _policy_published),
    ("A stale dependency", "dependency_stale", _stale_dependency),
    ("The late return of a replaced attempt", "attempt_superseded", _superseded),
    ("An expired lease", "lease_expired", _lease_expired),
    ("A scope violation", "scope_violation", _scope_violation),
    ("Missing evidence", "evidence_missing", _evidence(None)),
    ("Failed evidence", "evidence_failed", _evidence("fail")),
    ("Untrusted evidence", "evidence_untrusted", _untrusted),
    ("A revoked grant", "not_authorized", _revoked),
)


def run_story(console: Console, directory: Path | None = None) -> list[SceneResult]:
    """Play every scene in a fresh temporary ledger; return what each one showed."""
    with tempfile.TemporaryDirectory(prefix="studiolo-demo-") as tmp:
        where = directory or Path(tmp)
        clock = FakeClock()
        store = Store(Settings.sqlite_url(where / "demo.db"), clock=clock)
        try:
            coord = Coordinator(store, Settings(database_url=store.url), clock=clock)
            issued = coord.initialize()
            assert issued is not None
            story = _Story(setup_project(coord, issued.principal), clock, console)
            for title, expected, play in SCENES:
                story.scene(title, expected, lambda play=play: play(story))  # type: ignore[misc]
            _summary(console, story.results, coord.verify_audit().ok)
            return story.results
        finally:
            store.dispose()


def _summary(console: Console, results: list[SceneResult], audit_ok: bool) -> None:
    table = Table(title="What the ledger decided")
    for col in ("scene", "expected", "got", ""):
        table.add_column(col)
    for r in results:
        table.add_row(r.title, r.expected, r.got, "[green]✓[/]" if r.ok else "[red]✗[/]")
    console.print(table)
    console.print(f"audit chain verifies: {'[green]yes[/]' if audit_ok else '[red]no[/]'}")
