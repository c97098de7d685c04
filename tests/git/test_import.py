"""Import: the tree at a commit becomes the project's artifacts in one audited edit (exec
bits kept); everything Studiolo cannot hold is listed in one error, nothing half-applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from studiolo._exceptions import InvalidRequest
from studiolo.core.model import FileMode
from studiolo.faces.cli._git_import import run_import
from tests.faces.helpers import Actors
from tests.git.helpers import branch_files, ledger_files, projector_for
from tests.git.repos import git, hostile_repo, small_repo


def test_a_commits_tree_becomes_the_artifacts_in_one_edit(actors: Actors, tmp_path: Path) -> None:
    w, repo = actors.world, small_repo(tmp_path / "small")
    human = actors.client("human")
    before = w.coord.store.read(lambda tx: tx.audit.head(w.project_id).seq)
    out = run_import(human, str(repo), "main", None, False, 1 << 20, quiet=True)
    assert out["commit"] == git(repo, "rev-parse", "main")
    files = ledger_files(w)
    assert files == {
        "README.md": (b"# small\n", FileMode.REGULAR),
        "bin/tool.sh": (b"#!/bin/sh\necho tool\n", FileMode.EXECUTABLE),
        "src/lib.py": (b"def f():\n    return 2\n", FileMode.REGULAR),
    }  # the world's src/input.txt and src/answer.txt are gone: the tree is the artifacts
    events = w.coord.store.read(lambda tx: tx.audit.chain_events(w.project_id, before))
    assert [e.kind for e in events] == ["artifacts.imported"]
    assert events[0].data["commit"] == out["commit"] and events[0].data["deleted"] == [
        "src/answer.txt",
        "src/input.txt",
    ]
    projector = projector_for(w, tmp_path / "git")
    projector.run_once()
    assert branch_files(projector, w.project_id) == files
    tip = projector.repo(w.project_id).repo[projector.repo(w.project_id).tip("refs/heads/main")[0]]
    assert f"Studiolo-Source-Commit: {out['commit']}" in tip.message
    # the same tree again: one more commit, nothing written
    again = run_import(human, str(repo), "main", None, False, 1 << 20, quiet=True)
    assert (again["written"], again["deleted"], again["unchanged"]) == (0, 0, 3)


def test_a_hostile_tree_is_refused_whole_and_lists_every_entry(actors: Actors, tmp_path: Path) -> None:
    w = actors.world
    repo, refused = hostile_repo(tmp_path / "hostile.git")
    before = ledger_files(w)
    human = actors.client("human")
    with pytest.raises(InvalidRequest) as exc:
        run_import(human, str(repo), "main", None, False, 1 << 20, quiet=True)
    for name in refused:
        assert repr(name) in exc.value.detail
    assert "two spellings" in exc.value.detail or "normal form" in exc.value.detail
    assert ledger_files(w) == before  # nothing half-applied
    out = run_import(human, str(repo), "main", None, True, 1 << 20, quiet=True)
    assert {p for p, _ in out["skipped"]} >= set(refused)  # type: ignore[union-attr]
    assert set(ledger_files(w)) == {"ok.txt", "\u00e9.txt"}


def test_a_file_over_the_limit_is_listed(actors: Actors, tmp_path: Path) -> None:
    repo = small_repo(tmp_path / "small")
    with pytest.raises(InvalidRequest, match="over the 10-byte blob limit"):
        run_import(actors.client("human"), str(repo), "main", None, False, 10, quiet=True)


def test_an_import_needs_write_on_every_path(actors: Actors, tmp_path: Path) -> None:
    from studiolo import NotAuthorized

    repo = small_repo(tmp_path / "small")
    before = ledger_files(actors.world)
    with pytest.raises(NotAuthorized):  # the agent writes under src/ and docs/ only
        run_import(actors.client("agent"), str(repo), "main", None, False, 1 << 20, quiet=True)
    assert ledger_files(actors.world) == before


def test_the_independent_audit_checker_follows_an_import(actors: Actors, tmp_path: Path) -> None:
    from tests.auditcheck import check, load_deadlines, load_events
    from tests.faces.helpers import complete, new_task, submit, verify

    w = actors.world
    run_import(
        actors.client("human"), str(small_repo(tmp_path / "small")), "main", None, False, 1 << 20, quiet=True
    )
    agent = actors.client("agent")
    task = new_task(actors.client("admin"))
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/lib.py": b"x = 1\n"}, reads=("README.md",))
    complete(agent, task, attempt, cand, [verify(actors.client("verifier"), w, cand).id])
    url = w.coord.store.url
    assert check(load_events(url), load_deadlines(url)) == []


def test_an_import_request_larger_than_the_json_limit_is_taken(actors: Actors, tmp_path: Path) -> None:
    """The import request lists every path: a large tree outgrows the 1 MiB JSON cap, so its
    route takes up to the request ceiling (16 MiB, about 150,000 paths of 100 bytes)."""
    root = tmp_path / "wide"
    deep = root / ("a" * 200) / ("b" * 200) / ("c" * 200) / ("d" * 200)
    deep.mkdir(parents=True)
    for i in range(1200):
        (deep / f"{i:05d}.txt").write_text("x\n")  # one blob, 1,200 paths of ~815 characters
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "wide")
    out = run_import(actors.client("human"), str(root), "main", None, False, 1 << 20, quiet=True)
    assert out["files"] == 1200 and out["written"] == 1200
    assert len(ledger_files(actors.world)) == 1200
