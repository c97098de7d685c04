"""The workload: a repository's history as tasks (docs/evaluation.md, "The workload").

A task is one first-parent commit of a window: its scope is exactly the paths the commit
changed, its criterion is the repository's own test suite run by the real verifier, and its
*edit* is the commit's diff, re-applied (git's three-way file merge) onto whatever bytes the
agent's checkout holds.  The adjudication — the historical bytes and whether the suite passes
at the historical commit — stays with the harness: no agent reads it.

Human direct edits come from the commits *after* the window that touch a task's paths.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from studiolo.git.history import HistoryCommit, HistoryWindow, merge_file, read_window

__all__ = ["EvalTask", "HumanEdit", "Workload", "apply_change", "load_workload", "suite_argv"]

_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class EvalTask:
    index: int
    commit: str
    parent: str
    title: str
    before: Mapping[str, bytes | None]  # the changed paths at the parent (the edit's base)
    after: Mapping[str, bytes | None]  # the changed paths at the commit (the adjudicated bytes)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted(self.after))


@dataclass(frozen=True)
class HumanEdit:
    """A later commit's change to one path a task also changes."""

    commit: str
    path: str
    before: bytes | None
    after: bytes | None


@dataclass(frozen=True)
class Workload:
    repository: str  # what the user named (a path or a bundle): informational only
    base: str
    base_files: Mapping[str, bytes]
    tasks: tuple[EvalTask, ...]
    human_edits: tuple[HumanEdit, ...]

    @property
    def digest(self) -> str:
        """Pins the workload: the base tree and every task's and edit's bytes."""
        h = hashlib.sha256()
        for path in sorted(self.base_files):
            h.update(f"{path}\0{len(self.base_files[path])}\0".encode() + self.base_files[path])
        for task in self.tasks:
            h.update(f"task {task.commit}\0".encode())
            for path in task.paths:
                for side in (task.before[path], task.after[path]):
                    h.update(b"-" if side is None else hashlib.sha256(side).digest())
        for edit in self.human_edits:
            h.update(f"edit {edit.commit} {edit.path}\0".encode())
            for side in (edit.before, edit.after):
                h.update(b"-" if side is None else hashlib.sha256(side).digest())
        return "sha256:" + h.hexdigest()

    def pins(self) -> dict[str, object]:
        return {
            "base": self.base,
            "tasks": [t.commit for t in self.tasks],
            "human_edits": [f"{e.commit}:{e.path}" for e in self.human_edits],
            "workload_digest": self.digest,
            "files_at_base": len(self.base_files),
        }


def load_workload(location: str, until: str, count: int, edits: int = 4) -> Workload:
    """The `count` first-parent commits ending at `until`; up to `edits` human edits from the
    later commits touching the same paths."""
    window = read_window(location, until, count)
    tasks = tuple(_task(i, c) for i, c in enumerate(window.commits))
    return Workload(
        repository=location,
        base=window.base,
        base_files=dict(window.base_files),
        tasks=tasks,
        human_edits=_human_edits(window, tasks, edits),
    )


def _task(index: int, commit: HistoryCommit) -> EvalTask:
    return EvalTask(index, commit.commit, commit.parent, commit.title, commit.before, commit.after)


def _human_edits(window: HistoryWindow, tasks: tuple[EvalTask, ...], limit: int) -> tuple[HumanEdit, ...]:
    scoped = {p for t in tasks for p in t.paths}
    out = [
        HumanEdit(c.commit, p, c.before[p], c.after[p])
        for c in window.later
        for p in sorted(c.after)
        if p in scoped and c.before[p] is not None and c.after[p] is not None
    ]
    return tuple(out[:limit])


def apply_change(base: bytes | None, change: bytes | None, current: bytes | None) -> bytes | bool | None:
    """A historical change (`base` → `change`) re-applied on `current`; False on a conflict."""
    return merge_file(base, current, change)


def suite_argv(files: Mapping[str, bytes] | set[str]) -> list[str]:
    """The repository's own test suite, standard library only: `unittest` discovery, with the
    package under `src/` when the tree has a src layout."""
    src = any(p.startswith("src/") for p in files)
    path = "PYTHONPATH=src " if src else ""
    return ["sh", "-c", f"{path}PYTHONDONTWRITEBYTECODE=1 exec python3 -m unittest -q"]


def opened_files(task_paths: tuple[str, ...], contents: Mapping[str, bytes], tree: set[str]) -> list[str]:
    """What a scripted agent *opens* besides its targets: every file of the tree whose module
    name (the file's stem) appears as an identifier in the bytes it edits. Deterministic, and
    a stand-in for what an agent reads; docs/evaluation.md says so."""
    words: set[bytes] = set()
    for data in contents.values():
        words.update(_IDENT.findall(data))
    out = []
    for path in sorted(tree):
        stem = path.rsplit("/", 1)[-1].split(".", 1)[0].encode()
        if path not in task_paths and path.endswith(".py") and stem in words and stem != b"__init__":
            out.append(path)
    return out
