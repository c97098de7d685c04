"""Property: over random sequences of direct edits, deletes and completions, the branch has
one commit per change, in version order, and each commit's tree (files, bytes and modes)
is the ledger's artifacts right after that change."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pygit2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studiolo.core.model import FileMode
from studiolo.git.message import version_of
from studiolo.git.repository import BRANCH
from tests.git.helpers import ledger_files, projector_for
from tests.world import World, build_world

_PATHS = ["src/a.txt", "src/b/c.txt", "src/b/d.sh", "docs/e.md", "docs/deep/f/g.md"]
_content = st.one_of(st.none(), st.binary(max_size=20))
_edit = st.tuples(st.just("edit"), st.sampled_from(_PATHS), _content, st.sampled_from([None, *FileMode]))
_complete = st.tuples(st.just("complete"), st.dictionaries(st.sampled_from(_PATHS), _content, min_size=1))
_ops = st.lists(st.one_of(_edit, _complete), min_size=1, max_size=8)


def _apply(w: World, op: tuple[object, ...]) -> bool:
    """Apply one operation; False if it changed nothing (a delete of a path that is absent)."""
    live = ledger_files(w)
    if op[0] == "edit":
        _, path, data, mode = op
        assert isinstance(path, str)
        if data is None and path not in live:
            return False
        digest = w.put(data) if isinstance(data, bytes) else None
        rev = w.coord.read_revision(w.admin, w.project_id, path)
        w.coord.edit_artifact(w.human, w.project_id, path, digest, rev, mode)  # type: ignore[arg-type]
        return True
    files = {p: d for p, d in op[1].items() if d is not None or p in live}  # type: ignore[attr-defined]
    if not files:
        return False
    task = w.new_task(f"change {sorted(files)}")
    attempt = w.coord.claim(w.agent, task.id)
    cand = w.candidate(attempt, files)
    w.complete(task, attempt, cand, [w.receipt(cand).id])
    return True


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_ops)
def test_every_published_commit_is_the_ledger_after_its_change(ops: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        w = build_world(Path(tmp))
        head = lambda: w.coord.store.read(lambda tx: tx.publications.head(w.project_id))  # noqa: E731
        expected = {head(): ledger_files(w)}
        for op in ops:
            if _apply(w, op):
                expected[head()] = ledger_files(w)
        projector = projector_for(w, Path(tmp) / "git")
        projector.run_once()
        repo = projector.repo(w.project_id)
        tip = repo.tip(BRANCH)[0]
        assert tip is not None
        commits = list(repo.repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE))
        versions = [version_of(c.message) for c in commits]
        assert versions == sorted(versions) and len(set(versions)) == len(versions)
        published = {v: repo.files(c.id) for v, c in zip(versions, commits, strict=True)}
        total = w.coord.store.read(lambda tx: len(tx.publications.after(w.project_id, 0, 10_000)))
        assert len(commits) == total  # one commit per change
        for version, files in expected.items():
            assert published[version] == files
        w.coord.store.dispose()
