"""The README's git tour runs in bash exactly as written against `studiolo run`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faces.test_run_smoke import README, _studiolo_run


def _git_tour() -> str:
    section = README.read_text().split("## The tour in git", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_the_readme_git_tour_runs_as_written(tmp_path: Path) -> None:
    shim = tmp_path / ".venv" / "bin" / "studiolo"
    shim.parent.mkdir(parents=True)
    entry = "from studiolo.faces.cli import main; main()"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{entry}" "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUDIOLO_")}
    env["STUDIOLO_STATE_DIR"] = str(tmp_path / "cli-state")
    env.update({"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"})
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    with _studiolo_run(tmp_path, env) as url:
        script = _git_tour().replace("http://127.0.0.1:8765", url)
        run = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert "Double the number" in run.stdout and "Studiolo-Receipt: cmp_" in run.stdout
    assert "Notes (studiolo):" in run.stdout and '"payloadType": "application/vnd.in-toto+json"' in run.stdout
    assert (tmp_path / "repo" / "src" / "answer.txt").read_text() == "42\n"
