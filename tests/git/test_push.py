"""Writing through git: the real `git push` over HTTP with the bearer token. A push to
`refs/for/<task-or-attempt>` is a candidate of the pusher's attempt; a push to main is a
direct edit only if it fast-forwards from the published head; hostile pushes are refused
with the reason on git's sideband, and nothing of them lands: no candidate, no artifact,
no ref of the projection moved (docs/git.md, "Writing through git")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from studiolo._exceptions import Conflict, NotAuthorized
from studiolo.core.canonical import digest_bytes
from studiolo.core.model import FileMode
from studiolo.faces.cli._git_import import run_import
from studiolo.git.projector import Projector
from studiolo.git.repository import BRANCH, CHECKPOINTS
from studiolo.settings import Settings
from tests.faces.helpers import Actors, complete, new_task, verify
from tests.git.helpers import ledger_files, projector_for
from tests.git.repos import git, raw_tree, small_repo
from tests.world import World


def _git(live: Actors, who: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    header = f"http.extraHeader=Authorization: Bearer {live.tokens[who]}"
    env = {"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin", "HOME": str(cwd.parent)}
    env |= {
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@x",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@x",
    }
    return subprocess.run(
        ["git", "-c", "credential.helper=", "-c", header, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
    )


def _setup(live: Actors, tmp_path: Path, who: str = "agent") -> Path:
    """The small repository imported, and `who`'s clone of it."""
    run_import(
        live.client("human"), str(small_repo(tmp_path / "small")), "main", None, False, 1 << 20, quiet=True
    )
    clone = tmp_path / f"clone-{who}"
    done = _git(live, who, tmp_path, "clone", "-q", f"{live.url}/git/{live.world.project_id}.git", str(clone))
    assert done.returncode == 0, done.stderr
    return clone


def _commit(clone: Path, message: str = "change") -> str:
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", message, env={"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x"})
    return git(clone, "rev-parse", "HEAD")


def _projection(live: Actors) -> Projector:
    """A projector on the server's git root (publishing is idempotent: compare-and-swap)."""
    root = Settings(database_url=live.world.coord.store.url).git_root()
    assert root is not None
    return projector_for(live.world, root)


def _refs(live: Actors) -> dict[str, str]:
    """The projection's refs a push could move: the audit checkpoint is left out, the server's
    own publisher pays a checkpoint it owes whenever a pass runs (one may run during a push)."""
    repo = _projection(live).repo(live.world.project_id).repo
    return {name: str(repo.references[name].target) for name in repo.references if name != CHECKPOINTS}


def test_a_push_for_a_task_is_a_candidate_and_its_completion_comes_back_as_a_commit(
    live: Actors, tmp_path: Path
) -> None:
    w, agent = live.world, live.client("agent")
    clone = _setup(live, tmp_path)
    task = new_task(live.client("admin"))
    attempt = agent.claim(task.id)
    (clone / "src" / "lib.py").write_text("def f():\n    return 3\n")
    (clone / "src" / "new.py").write_text("X = 1\n")
    _commit(clone, "three")
    before = _refs(live)
    push = _git(live, "agent", clone, "push", "origin", f"HEAD:refs/for/{task.id}")
    assert push.returncode == 0, push.stderr
    assert "remote: studiolo: candidate cnd_" in push.stderr
    assert _refs(live) == before  # the push moved no ref of the projection
    cand = agent.task(task.id).candidates[-1]
    assert cand.attempt_id == attempt.id
    assert cand.files == {
        "src/lib.py": digest_bytes(b"def f():\n    return 3\n"),
        "src/new.py": digest_bytes(b"X = 1\n"),
    }
    assert cand.bases == {"src/lib.py": agent.revision("src/lib.py"), "src/new.py": 0}
    complete(agent, task, attempt, cand, [verify(live.client("verifier"), w, cand).id])
    pull = _git(live, "agent", clone, "pull", "-q", "--rebase", "origin", "main")
    assert pull.returncode == 0, pull.stderr
    assert git(clone, "log", "-1", "--format=%s") == task.title
    assert git(clone, "status", "--porcelain") == ""
    assert (clone / "src" / "new.py").read_text() == "X = 1\n"


def test_reads_come_from_push_options_and_trailers(live: Actors, tmp_path: Path) -> None:
    agent = live.client("agent")
    clone = _setup(live, tmp_path)
    task = new_task(live.client("admin"))
    agent.claim(task.id)
    (clone / "src" / "lib.py").write_text("one\n")
    _commit(clone, "one\n\nStudiolo-Read: bin/tool.sh")
    push = _git(live, "agent", clone, "push", "-o", "dep=README.md", "origin", f"HEAD:refs/for/{task.id}")
    assert push.returncode == 0, push.stderr
    cand = agent.task(task.id).candidates[-1]
    assert cand.file_deps == {
        "README.md": agent.revision("README.md"),
        "bin/tool.sh": agent.revision("bin/tool.sh"),
    }


def test_a_push_to_main_that_fast_forwards_is_one_direct_edit(live: Actors, tmp_path: Path) -> None:
    clone = _setup(live, tmp_path, "human")
    (clone / "README.md").write_text("# pushed\n")
    (clone / "src" / "lib.py").unlink()
    (clone / "bin" / "run.sh").write_text("#!/bin/sh\n")
    (clone / "bin" / "run.sh").chmod(0o755)
    pushed = _commit(clone, "edit through git")
    events = live.world.coord.events(live.world.admin, live.world.project_id)
    push = _git(live, "human", clone, "push", "origin", "HEAD:main")
    assert push.returncode == 0, push.stderr
    assert "direct edit of 3 paths" in push.stderr
    files = ledger_files(live.world)
    assert files["README.md"] == (b"# pushed\n", FileMode.REGULAR)
    assert files["bin/run.sh"] == (b"#!/bin/sh\n", FileMode.EXECUTABLE)
    assert "src/lib.py" not in files
    after = live.world.coord.events(live.world.admin, live.world.project_id, after=events[-1].seq)
    assert [e.kind for e in after] == ["artifacts.edited"]  # one audited edit, all paths at once
    _projection(live).publish(live.world.project_id)
    head = _refs(live)[BRANCH]
    assert head != pushed  # the ledger's own commit: the service's message and times ...
    assert git(clone, "rev-parse", f"{pushed}^{{tree}}") == _tree_of(live, head)  # ... the pushed tree
    pull = _git(live, "human", clone, "pull", "-q", "--rebase", "origin", "main")
    assert pull.returncode == 0, pull.stderr
    assert git(clone, "rev-parse", "HEAD") == head


def _tree_of(live: Actors, commit: str) -> str:
    repo = _projection(live).repo(live.world.project_id)
    return str(repo.tree_of(repo.repo.revparse_single(commit).id))


def _refused(live: Actors, who: str, clone: Path, ref: str, needle: str, *options: str) -> None:
    _projection(live).publish(live.world.project_id)  # what the ledger committed before the push
    before_refs, before_files = _refs(live), ledger_files(live.world)
    push = _git(live, who, clone, "push", *options, "origin", ref)
    assert push.returncode != 0
    assert needle in push.stderr, push.stderr
    assert _refs(live) == before_refs
    assert ledger_files(live.world) == before_files


def test_hostile_pushes_are_refused_and_nothing_lands(live: Actors, tmp_path: Path) -> None:
    w, agent = live.world, live.client("agent")
    clone = _setup(live, tmp_path)
    task = new_task(live.client("admin"))
    other = new_task(live.client("admin"), title="someone else's")
    theirs = live.client("agent2").claim(other.id)
    agent.claim(task.id)
    base = git(clone, "rev-parse", "HEAD")
    (clone / "src" / "lib.py").write_text("mine\n")
    _commit(clone)
    _refused(live, "agent", clone, f"HEAD:refs/for/{theirs.id}", "belongs to another principal")
    _refused(live, "agent", clone, f"HEAD:refs/for/{other.id}", "belongs to another principal")
    _refused(live, "agent", clone, "HEAD:refs/heads/feature", "push to refs/for/")
    _refused(live, "agent", clone, "HEAD:refs/for/tsk_" + "0" * 32, "not found")
    (clone / "README.md").write_text("not mine to edit\n")  # the agent writes src/** and docs/** only
    _commit(clone)
    _refused(live, "agent", clone, "HEAD:main", "holds no live write grant")
    # two commits on the published one: the parent of the pushed commit is not published
    _refused(live, "agent", clone, f"HEAD:refs/for/{task.id}", "not a published commit")
    # a symbolic link, and a huge (but well compressed) blob
    git(clone, "reset", "-q", "--hard", base)
    (clone / "src" / "link").symlink_to("lib.py")
    _commit(clone)
    _refused(live, "agent", clone, f"HEAD:refs/for/{task.id}", "symbolic link")
    git(clone, "reset", "-q", "--hard", base)
    (clone / "src" / "big.bin").write_bytes(bytes(w.coord.settings.max_blob_bytes + 1))
    _commit(clone)
    _refused(live, "agent", clone, f"HEAD:refs/for/{task.id}", "larger than the blob limit")
    # a tree with a `.git` spelling, written by hand (git's own fsck refuses it on receipt)
    blob = git(clone, "hash-object", "-w", "--stdin", data=b"[core]\n")
    inner = raw_tree(clone, [("100644", "config", blob)])
    src = git(clone, "rev-parse", f"{base}:src")
    top = raw_tree(clone, sorted([("40000", ".GIT", inner), ("40000", "src", src)], key=lambda e: e[1]))
    evil = git(clone, "commit-tree", top, "-p", base, "-m", "evil")
    _refused(live, "agent", clone, f"{evil}:refs/for/{task.id}", "contains '.git'")
    # a name git takes and Studiolo's normalizer does not (a control character)
    ctl = raw_tree(
        clone,
        [
            ("100644", "ctl\x01.txt", blob),
            ("100644", "lib.py", git(clone, "rev-parse", f"{base}:src/lib.py")),
        ],
    )
    top = raw_tree(clone, sorted([("40000", "src", ctl), *_others(clone, base)], key=lambda e: e[1]))
    evil = git(clone, "commit-tree", top, "-p", base, "-m", "control")
    _refused(live, "agent", clone, f"{evil}:refs/for/{task.id}", "control character")
    _refused(live, "agent", clone, f"HEAD:refs/for/{task.id}", "unknown push option", "-o", "sudo=1")
    assert agent.task(task.id).candidates == []


def _others(clone: Path, commit: str) -> list[tuple[str, str, str]]:
    """The top-level entries of a commit's tree but `src`."""
    out = []
    for line in git(clone, "ls-tree", commit).splitlines():
        meta, name = line.split("\t")
        mode, _kind, oid = meta.split()
        if name != "src":
            out.append((str(int(mode)), name, oid))  # git writes trees as 40000
    return out


def test_a_stale_parent_or_a_non_fast_forward_is_refused_with_why(live: Actors, tmp_path: Path) -> None:
    agent = live.client("agent")
    clone = _setup(live, tmp_path)
    human = _setup_second_clone(live, tmp_path)
    task = new_task(live.client("admin"))
    agent.claim(task.id)
    live.world.edit("src/lib.py", b"moved on\n")  # the ledger moves after both clones
    (clone / "src" / "lib.py").write_text("mine\n")
    _commit(clone)
    _refused(live, "agent", clone, f"HEAD:refs/for/{task.id}", "changed in the ledger since your parent")
    (human / "README.md").write_text("# late\n")
    _commit(human)
    _refused(live, "human", human, "HEAD:main", "fetch first")  # git's own client sees the new head
    _refused(live, "human", human, "+HEAD:main", "does not fast-forward from the published head")
    _refused(live, "human", human, ":main", "a push cannot delete")
    assert agent.task(task.id).candidates == []


def _setup_second_clone(live: Actors, tmp_path: Path) -> Path:
    clone = tmp_path / "clone-human"
    done = _git(
        live, "human", tmp_path, "clone", "-q", f"{live.url}/git/{live.world.project_id}.git", str(clone)
    )
    assert done.returncode == 0, done.stderr
    return clone


@pytest.mark.parametrize("who", ["agent"])
def test_a_path_scoped_reader_may_not_push(live: Actors, tmp_path: Path, who: str) -> None:
    w = live.world
    clone = _setup(live, tmp_path, who)
    scoped = w.coord.add_principal(w.admin, w.project_id, "scoped", "agent").principal
    w.coord.grant(w.admin, w.project_id, scoped.id, ["read", "write"], ["src/**"])
    live.tokens["scoped"] = w.coord.rotate_token(w.admin, scoped.id).token
    (clone / "src" / "lib.py").write_text("scoped\n")
    _commit(clone)
    _refused(live, "scoped", clone, "HEAD:main", "studiolo checkout")


def test_a_multi_path_edit_is_all_or_none(world: World) -> None:
    w = world
    w.edit("docs/a.md", b"a\n")
    w.edit("docs/b.md", b"b\n")
    revs = {p: w.coord.read_revision(w.admin, w.project_id, p) for p in ("docs/a.md", "docs/b.md")}
    w.edit("docs/b.md", b"b2\n")  # b moves on: the edit's base for it is stale
    edits = {"docs/a.md": (w.put(b"A\n"), FileMode.EXECUTABLE), "docs/b.md": (None, FileMode.REGULAR)}
    before = ledger_files(w)
    with pytest.raises(Conflict) as refused:
        w.coord.edit_artifacts(w.human, w.project_id, edits, revs, {"commit": "c" * 40})
    assert refused.value.reason == "revision_conflict" and "docs/b.md" in refused.value.detail
    assert ledger_files(w) == before
    revs["docs/b.md"] += 1
    done = w.coord.edit_artifacts(w.human, w.project_id, edits, revs, {"commit": "c" * 40})
    assert done.revisions == {"docs/a.md": revs["docs/a.md"] + 1, "docs/b.md": revs["docs/b.md"] + 1}
    after = ledger_files(w)
    assert after["docs/a.md"] == (b"A\n", FileMode.EXECUTABLE) and "docs/b.md" not in after
    with pytest.raises(NotAuthorized):  # every path needs a write grant, or none is written
        w.coord.edit_artifacts(
            w.agent, w.project_id, {"README.md": (None, FileMode.REGULAR)}, {"README.md": 0}, {}
        )


def test_an_older_published_parent_is_taken_when_its_paths_did_not_move(live: Actors, tmp_path: Path) -> None:
    agent = live.client("agent")
    clone = _setup(live, tmp_path)
    task = new_task(live.client("admin"))
    agent.claim(task.id)
    live.world.edit("docs/elsewhere.md", b"moved on\n")  # main moves, not on the pushed paths
    (clone / "src" / "lib.py").write_text("mine\n")
    _commit(clone)
    push = _git(live, "agent", clone, "push", "origin", f"HEAD:refs/for/{task.id}")
    assert push.returncode == 0, push.stderr
    cand = agent.task(task.id).candidates[-1]
    assert cand.bases == {"src/lib.py": agent.revision("src/lib.py")}


def test_concurrent_pushes_each_become_their_own_candidate(live: Actors, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    first = _setup(live, tmp_path)
    second = tmp_path / "clone-agent2"
    done = _git(
        live, "agent2", tmp_path, "clone", "-q", f"{live.url}/git/{live.world.project_id}.git", str(second)
    )
    assert done.returncode == 0, done.stderr
    tasks = {who: new_task(live.client("admin"), title=f"task of {who}") for who in ("agent", "agent2")}
    for who, task in tasks.items():
        live.client(who).claim(task.id)
    for who, clone in (("agent", first), ("agent2", second)):
        (clone / "src" / f"{who}.txt").write_text(f"{who}\n")
        _commit(clone)

    def push(who: str, clone: Path) -> subprocess.CompletedProcess[str]:
        return _git(live, who, clone, "push", "origin", f"HEAD:refs/for/{tasks[who].id}")

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(push, ["agent", "agent2"], [first, second]))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    for who, task in tasks.items():
        (cand,) = live.client(who).task(task.id).candidates
        assert cand.files == {f"src/{who}.txt": digest_bytes(f"{who}\n".encode())}


def test_a_push_over_the_cap_is_answered_on_the_sideband(live: Actors, tmp_path: Path) -> None:
    """A push of 3 MiB (over the 1 MiB of a JSON route) lands; one larger than the cap
    (16 MiB) reads as `remote: studiolo: ...` saying why, not `HTTP 413`, and nothing of it
    lands."""
    clone = _setup(live, tmp_path, "human")
    middle = os.urandom(3 << 20)  # incompressible
    (clone / "src" / "middle.bin").write_bytes(middle)
    _commit(clone, "three MiB")
    push = _git(live, "human", clone, "push", "origin", "HEAD:main")
    assert push.returncode == 0, push.stderr
    assert ledger_files(live.world)["src/middle.bin"] == (middle, FileMode.REGULAR)
    pull = _git(live, "human", clone, "pull", "-q", "--rebase", "origin", "main")
    assert pull.returncode == 0, pull.stderr
    for i in range(3):  # three files under the blob limit, together over the request's cap
        (clone / "src" / f"big{i}.bin").write_bytes(os.urandom(6 << 20))
    _commit(clone, "eighteen MiB")
    _refused(live, "human", clone, "HEAD:main", "remote: studiolo: the push is 18.")
    push = _git(live, "human", clone, "push", "origin", "HEAD:main")
    assert "over the 16 MiB one push request may carry" in push.stderr, push.stderr
    assert "[remote rejected] HEAD -> main (the push is 18." in push.stderr
    assert "413" not in push.stderr and "RPC failed" not in push.stderr
