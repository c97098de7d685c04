"""A check's workspace on the host: a private temporary directory, held while it exists.

`tree/` holds the candidate (sealed read-only), `scratch/`, `inputs/` (files the runner
writes for the checker), `reports/` (files the checker writes for the runner) and
`output.log`. The directory is 0700 (0500 once sealed), so no other local user reads the
candidate during a check, and the verifier holds a `flock` on it: `remove_stale` removes
only workspaces nobody holds, those of a verifier killed mid-check.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import time
from pathlib import Path
from types import TracebackType

from studiolo.verifier.tree import remove_tree, tree_digest

__all__ = ["Workspace"]


class Workspace:
    """A fresh temporary directory for one check; removed on exit, whatever the checker did.

    The directory is private (0700, or 0750 with the group of `--run-as` for an unisolated
    check that must reach its tree), so no other local user can read the candidate while it
    is checked; an isolated check reaches the tree through its own mount view. The verifier
    holds an exclusive `flock` on it while it exists: `remove_stale` (run when a runner
    starts) removes only workspaces nobody holds, those of a verifier that was killed.
    """

    PREFIX = "studiolo-verify-"
    _EXPECTED = frozenset({"tree", "scratch", "inputs", "reports", "output.log"})

    def __init__(self, parent: Path | None = None, group: int | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=self.PREFIX, dir=parent))  # 0700
        self._lock = _lock(self.root)
        self.group = group
        self.tree = self.root / "tree"
        self.scratch = self.root / "scratch"
        self.inputs = self.root / "inputs"
        self.reports = self.root / "reports"
        self.output = self.root / "output.log"
        self.tree.mkdir()
        self.scratch.mkdir(mode=0o700)
        self.inputs.mkdir(mode=0o755)
        self.reports.mkdir(mode=0o755)
        self.output.touch(mode=0o600)
        self._sealed_digest: str | None = None

    @classmethod
    def remove_stale(cls, parent: Path | None = None, older_than: float = 0.0) -> list[Path]:
        """Remove the workspaces under `parent` (default: the temp dir) that this user owns,
        no live verifier holds, and nothing changed for `older_than` seconds (a verifier of an
        older version takes no lock, and may still be checking in a younger one): those left
        by a verifier killed mid-check."""
        where = Path(parent or tempfile.gettempdir())
        cutoff = time.time() - older_than
        removed = []
        for path in sorted(where.glob(cls.PREFIX + "*")):
            with contextlib.suppress(OSError):
                st = path.lstat()
                if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mtime > cutoff:
                    continue
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a live check
                    remove_tree(path)
                    removed.append(path)
                finally:
                    os.close(fd)
        return removed

    def seal(self) -> str:
        """Make the tree and the workspace root read-only; remember the tree's digest."""
        for dirpath, _dirnames, filenames in os.walk(self.tree, topdown=False):
            for name in filenames:
                file = os.path.join(dirpath, name)
                executable = os.stat(file, follow_symlinks=False).st_mode & stat.S_IXUSR
                os.chmod(file, 0o555 if executable else 0o444)  # a candidate's 100755 stays so
            os.chmod(dirpath, 0o555)
        if self.group is not None:
            os.chown(self.root, -1, self.group)
            os.chmod(self.root, 0o550)
        else:
            os.chmod(self.root, 0o500)
        self._sealed_digest = tree_digest(self.tree)
        return self._sealed_digest

    def violations(self) -> list[str]:
        """What the checker changed outside its scratch directory (empty: nothing)."""
        found = []
        if self._sealed_digest is not None and tree_digest(self.tree) != self._sealed_digest:
            found.append("the candidate tree changed (files written, removed or altered)")
        extra = sorted({p.name for p in self.root.iterdir()} - self._EXPECTED)
        if extra:
            found.append(f"new entries next to the tree: {extra[:10]}")
        return found

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        try:
            remove_tree(self.root)
        finally:
            os.close(self._lock)


def _lock(root: Path) -> int:
    """An fd on `root` holding an exclusive flock (close-on-exec: checks never inherit it)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd
