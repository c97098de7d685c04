"""The harness's own run of the repository's suite on a tree (post-merge breakage, the final
branch): the verifier's sandbox and the `command` kind, the result kept per tree digest (a
pure function of the bytes, so a tree is never run twice in one evaluation)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from studiolo.verifier import Isolation, Limits, Sandbox, Workspace
from studiolo.verifier.checkers import CommandChecker

__all__ = ["Suite"]


class Suite:
    def __init__(self, argv: Sequence[str], isolation: Isolation | None, workdir: Path | None = None) -> None:
        self.argv = list(argv)
        self.isolation = isolation
        self.workdir = workdir
        self.limits = Limits()
        self.runs = 0
        self._memo: dict[str, bool] = {}

    def passes(self, tree: Mapping[str, bytes]) -> bool:
        key = _tree_digest(tree)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._run(tree)
        return found

    def _run(self, tree: Mapping[str, bytes]) -> bool:
        self.runs += 1
        with Workspace(self.workdir) as ws:
            for path, data in tree.items():
                target = ws.tree / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            ws.seal()
            sandbox = Sandbox(ws, self.limits, isolation=self.isolation)
            return CommandChecker().run(ws.tree, {"argv": self.argv, "timeout": 300}, sandbox).passed


def _tree_digest(tree: Mapping[str, bytes]) -> str:
    h = hashlib.sha256()
    for path in sorted(tree):
        h.update(path.encode() + b"\0" + hashlib.sha256(tree[path]).digest())
    return h.hexdigest()
