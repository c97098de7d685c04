"""Reading: `git clone` through the service (git's own http-backend) gives the ledger's
artifacts, for principals who may read the whole project; a path-scoped reader is refused
with a pointer to `studiolo checkout`. Also the real history of tomli, imported."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from studiolo.core.model import FileMode
from studiolo.faces.cli._git_import import run_import
from studiolo.git.dsse import open_envelope
from tests.faces.helpers import Actors
from tests.git.helpers import ledger_files
from tests.git.repos import git, small_repo

# ../shared beside the repository (CI, /work/main), or one level up from a worktree (/work/wt/NAME).
_BESIDE = [Path(__file__).resolve().parents[n] / "shared" / "eval" / "tomli.bundle" for n in (3, 4)]
_TOMLI = next((p for p in _BESIDE if p.is_file()), _BESIDE[0])


def _clone(url: str, target: Path, header: str | None = None) -> subprocess.CompletedProcess[str]:
    args = ["git", "-c", "credential.helper=", "-c", f"http.extraHeader={header}"] if header else ["git"]
    env = {"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin", "HOME": str(target.parent)}
    return subprocess.run([*args, "clone", "-q", url, str(target)], capture_output=True, text=True, env=env)


def _work_tree(root: Path) -> dict[str, tuple[bytes, FileMode]]:
    out = {}
    for line in git(root, "ls-files", "-s").splitlines():
        mode, _oid, _stage_path = line.split(" ", 2)
        path = _stage_path.split("\t", 1)[1]
        executable = FileMode.EXECUTABLE if mode == "100755" else FileMode.REGULAR
        out[path] = ((root / path).read_bytes(), executable)
    return out


def _repo_url(live: Actors) -> str:
    return f"{live.url}/git/{live.world.project_id}.git"


def test_a_clone_is_the_ledgers_artifacts_with_the_note(live: Actors, tmp_path: Path) -> None:
    human = live.client("human")
    run_import(human, str(small_repo(tmp_path / "small")), "main", None, False, 1 << 20, quiet=True)
    clone = tmp_path / "clone"
    done = _clone(_repo_url(live), clone, f"Authorization: Bearer {live.tokens['human']}")
    assert done.returncode == 0, done.stderr
    assert _work_tree(clone) == ledger_files(live.world)
    status = human.git_status()
    assert status.current and status.commit == git(clone, "rev-parse", "HEAD")
    assert "Studiolo-Version: " + str(status.published_version) in git(clone, "log", "-1", "--format=%B")


def test_the_token_as_password_clones_and_notes_verify(live: Actors, tmp_path: Path) -> None:
    from tests.faces.helpers import complete, new_task, submit, verify

    w, agent = live.world, live.client("agent")
    task = new_task(live.client("admin"))
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    complete(agent, task, attempt, cand, [verify(live.client("verifier"), w, cand).id])
    url = _repo_url(live).replace("http://", f"http://agent:{live.tokens['agent']}@")
    clone = tmp_path / "clone"
    assert _clone(url, clone).returncode == 0
    git(clone, "fetch", "-q", "origin", "refs/notes/studiolo:refs/notes/studiolo")
    note = git(clone, "notes", "--ref=studiolo", "show", "HEAD")
    import json

    statement = open_envelope(json.loads(note), live.client("agent").jwks())
    assert statement["subject"][0]["digest"]["gitCommit"] == git(clone, "rev-parse", "HEAD")


def test_a_path_scoped_reader_is_refused_with_a_pointer_to_checkout(live: Actors, tmp_path: Path) -> None:
    w = live.world
    scoped = w.coord.add_principal(w.admin, w.project_id, "scoped", "agent").principal
    w.coord.grant(w.admin, w.project_id, scoped.id, ["read"], ["docs/**"])
    token = w.coord.rotate_token(w.admin, scoped.id).token
    done = _clone(_repo_url(live), tmp_path / "clone", f"Authorization: Bearer {token}")
    assert done.returncode != 0
    assert "studiolo checkout" in done.stderr
    assert _clone(_repo_url(live), tmp_path / "anon").returncode != 0  # no token: no clone
    bad = _clone(_repo_url(live), tmp_path / "bad", "Authorization: Bearer stl_nope")
    assert bad.returncode != 0


@pytest.mark.slow
def test_tomlis_real_history_imports_and_clones_back(live: Actors, tmp_path: Path) -> None:
    if not _TOMLI.is_file():
        pytest.skip(f"the tomli bundle is absent ({_TOMLI}): the real-history test needs ../shared/eval")
    human = live.client("human")
    out = run_import(human, str(_TOMLI), "HEAD", None, False, 1 << 22, quiet=True)
    assert out["files"] and not out["skipped"]
    clone = tmp_path / "clone"
    assert _clone(_repo_url(live), clone, f"Authorization: Bearer {live.tokens['human']}").returncode == 0
    assert _work_tree(clone) == ledger_files(live.world)
    source = tmp_path / "tomli"
    subprocess.run(["git", "clone", "-q", str(_TOMLI), str(source)], check=True)
    assert git(source, "rev-parse", "HEAD^{tree}") == git(clone, "rev-parse", "HEAD^{tree}")
