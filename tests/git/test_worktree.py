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
