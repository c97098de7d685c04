"""The README's git tour runs in bash exactly as written against `studiolo run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faces.test_run_smoke import readme_block, run_tour, tour_env


@pytest.mark.slow
def test_the_readme_git_tour_runs_as_written(tmp_path: Path) -> None:
    env = tour_env(tmp_path)
    env.update({"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"})
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    run = run_tour(tmp_path, env, readme_block("## The tour in git"))
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert "Double the number" in run.stdout and "Studiolo-Receipt: cmp_" in run.stdout
    assert "Notes (studiolo):" in run.stdout and '"payloadType": "application/vnd.in-toto+json"' in run.stdout
    assert (tmp_path / "repo" / "src" / "answer.txt").read_text() == "42\n"
