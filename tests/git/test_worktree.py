"""Agents work in git: `studiolo checkout --git` clones the published branch, `studiolo
submit` derives the candidate from the work tree against its base commit (adds, edits,
deletes, renames; untracked included, ignored not), and the accepted completion comes back
as the next commit, with its note, on `git pull`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from studiolo.faces.cli import CliState, app
from studiolo.settings import ClientSettings
from tests.faces.helpers import Actors, complete, new_task, verify
from tests.git.repos import git, small_repo

runner = CliRunner()


def cli(live: Actors, who: str, tmp: Path, *args: str, code: int = 0) -> Any:
    settings = ClientSettings(
        url=live.url, token=live.tokens[who], project=live.world.project_id, state_dir=tmp / "state"
    )
    result = runner.invoke(app, [*args, "--json"], obj=CliState(settings, None))
    assert result.exit_code == code, (args, result.output, result.exception)
    return json.loads(result.stdout) if code == 0 else result.output


def test_checkout_edit_submit_complete_pull(live: Actors, tmp_path: Path) -> None:
    w = live.world
    cli(live, "human", tmp_path, "git", "import", str(small_repo(tmp_path / "small")), "--ref", "main")
    task = new_task(live.client("admin"), "rename and extend", scope=("src/**",))
    agent = live.client("agent")
    attempt = agent.claim(task.id)
    work = tmp_path / "work"
    manifest = cli(live, "agent", tmp_path, "checkout", "--git", str(work))
    assert manifest["base_commit"] == git(work, "rev-parse", "HEAD")
    git(work, "mv", "src/lib.py", "src/core.py")  # a rename: a delete and an add
    (work / "src" / "new.py").write_text("NEW = 1\n")  # untracked, included
    (work / ".gitignore").write_text("src/*.log\n")
    (work / "src" / "debug.log").write_text("ignored\n")  # ignored, not submitted
    refused = cli(live, "agent", tmp_path, "submit", attempt.id, str(work), code=1)
    assert "scope_violation" in refused and ".gitignore" in refused  # untracked files count
    (work / ".gitignore").unlink()
    git(work, "config", "core.excludesFile", str(tmp_path / "excludes"))
    (tmp_path / "excludes").write_text("*.log\n")
    out = cli(live, "agent", tmp_path, "submit", attempt.id, str(work))
    assert out["files"].keys() == {"src/lib.py", "src/core.py", "src/new.py"}
    assert out["files"]["src/lib.py"] is None
    assert out["bases"] == {"src/lib.py": 1, "src/core.py": 0, "src/new.py": 0}
    cand_out = agent.candidate(out["id"])
    complete(agent, task, attempt, cand_out, [verify(live.client("verifier"), w, cand_out).id])
    git(work, "stash", "-q", "-u")  # the agent's own edits: the published commit brings them back
    git(
        work,
        "-c",
        f"http.extraHeader=Authorization: Bearer {live.tokens['agent']}",
        "pull",
        "-q",
        "--ff-only",
    )
    message = git(work, "log", "-1", "--format=%B")
    assert message.startswith("rename and extend") and f"Studiolo-Task: {task.id}" in message
    assert (work / "src" / "core.py").read_text() == "def f():\n    return 2\n"
    assert not (work / "src" / "lib.py").exists()


def _lines(n: int, changed: dict[int, str] | None = None) -> bytes:
    rows = [f"line {i}" for i in range(n)]
    for i, text in (changed or {}).items():
        rows[i] = text
    return ("\n".join(rows) + "\n").encode()


def test_rebase_merges_onto_the_current_commit_or_lists_conflicts(live: Actors, tmp_path: Path) -> None:
    from studiolo import CompletionRejected

    w = live.world
    w.edit("src/lib.py", _lines(12))
    task = new_task(live.client("admin"), "edit the end", scope=("src/**",))
    agent = live.client("agent")
    attempt = agent.claim(task.id)
    work = tmp_path / "work"
    cli(live, "agent", tmp_path, "checkout", "--git", str(work))
    (work / "src" / "lib.py").write_bytes(_lines(12, {11: "agent's end"}))
    first = agent.candidate(cli(live, "agent", tmp_path, "submit", attempt.id, str(work))["id"])
    w.edit("src/lib.py", _lines(12, {0: "editor's start"}))  # the target's base moves
    try:
        complete(agent, task, attempt, first, [verify(live.client("verifier"), w, first).id])
    except CompletionRejected as exc:
        assert "target_base_stale" in exc.failed
    else:
        raise AssertionError("a stale base was accepted")
    out = cli(live, "agent", tmp_path, "rebase", attempt.id, str(work))
    assert out["conflicts"] == [] and out["base_commit"] == git(work, "rev-parse", "HEAD")
    assert (work / "src" / "lib.py").read_bytes() == _lines(12, {0: "editor's start", 11: "agent's end"})
    second = agent.candidate(cli(live, "agent", tmp_path, "submit", attempt.id, str(work))["id"])
    complete(agent, task, attempt, second, [verify(live.client("verifier"), w, second).id])
    # a conflict: both change the same line
    task2 = new_task(live.client("admin"), "edit the start", scope=("src/**",))
    attempt2 = agent.claim(task2.id)
    work2 = tmp_path / "work2"
    cli(live, "agent", tmp_path, "checkout", "--git", str(work2))
    (work2 / "src" / "lib.py").write_bytes(_lines(12, {0: "agent's start", 11: "agent's end"}))
    w.edit("src/lib.py", _lines(12, {0: "editor's second start", 11: "agent's end"}))
    refused = cli(live, "agent", tmp_path, "rebase", attempt2.id, str(work2), code=1)
    assert "src/lib.py" in refused
    assert b"<<<<<<<" in (work2 / "src" / "lib.py").read_bytes()


def test_an_executable_bit_travels_from_a_checkout_to_a_clone(live: Actors, tmp_path: Path) -> None:
    """chmod +x in a git checkout → submit → verify → complete → a fresh clone has 100755; a
    mode change alone (the same bytes) is a change, and the receipt binds the mode."""
    w = live.world
    cli(live, "human", tmp_path, "git", "import", str(small_repo(tmp_path / "small")), "--ref", "main")
    task = new_task(live.client("admin"), "make it runnable", scope=("src/**",))
    agent = live.client("agent")
    attempt = agent.claim(task.id)
    work = tmp_path / "work"
    cli(live, "agent", tmp_path, "checkout", "--git", str(work))
    (work / "src" / "lib.py").chmod(0o755)  # the bytes unchanged: only the mode
    (work / "src" / "run.sh").write_text("#!/bin/sh\nexec python3 -c 'print(1)'\n")
    (work / "src" / "run.sh").chmod(0o755)
    out = cli(live, "agent", tmp_path, "submit", attempt.id, str(work))
    assert out["files"].keys() == {"src/lib.py", "src/run.sh"}
    assert out["modes"] == {"src/lib.py": "executable", "src/run.sh": "executable"}
    assert out["bases"]["src/lib.py"] == 1
    cand = agent.candidate(out["id"])
    regular = agent.submit_candidate(attempt.id, cand.files, cand.bases, cand.file_deps)
    assert regular.digest != cand.digest and regular.modes == {}
    complete(agent, task, attempt, cand, [verify(live.client("verifier"), w, cand).id])
    arts = {a.path: a for a in live.client("admin").artifacts("src/")}
    assert (arts["src/lib.py"].mode, arts["src/lib.py"].revision) == ("executable", 2)
    clone = tmp_path / "clone"
    header = f"http.extraHeader=Authorization: Bearer {live.tokens['agent']}"
    git(tmp_path, "-c", header, "clone", "-q", f"{live.url}/git/{w.project_id}.git", str(clone))
    modes = {line.split("\t")[1]: line.split(" ")[0] for line in git(clone, "ls-files", "-s").splitlines()}
    assert modes["src/lib.py"] == modes["src/run.sh"] == modes["bin/tool.sh"] == "100755"
    assert modes["README.md"] == "100644"
    assert (clone / "src" / "run.sh").stat().st_mode & 0o100
