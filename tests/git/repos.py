"""Real repositories for the git tests, built with the `git` binary; hostile trees are
written as raw objects (`hash-object --literally`), as an attacker would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def git(cwd: Path, *args: str, data: bytes = b"", env: dict[str, str] | None = None) -> str:
    full = {**os.environ, **_ENV, **(env or {})}
    done = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, env=full, check=True)
    return done.stdout.decode().strip()


def small_repo(root: Path) -> Path:
    """A work tree with nested files, an executable script and two commits on `main`."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "lib.py").write_text("def f():\n    return 1\n")
    (root / "README.md").write_text("# small\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    tool = root / "bin" / "tool.sh"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho tool\n")
    tool.chmod(0o755)
    (root / "src" / "lib.py").write_text("def f():\n    return 2\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "second")
    return root


def raw_tree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A tree object of (mode, name, object id) entries, unchecked; its id."""
    body = b"".join(m.encode() + b" " + n.encode() + b"\0" + bytes.fromhex(oid) for m, n, oid in entries)
    return git(repo, "hash-object", "-w", "-t", "tree", "--literally", "--stdin", data=body)


def hostile_repo(root: Path) -> tuple[Path, list[str]]:
    """A bare repository whose `main` holds a good file and every entry an import refuses;
    the refused names as the tree spells them."""
    git(root.parent, "init", "-q", "--bare", "-b", "main", str(root))
    blob = git(root, "hash-object", "-w", "--stdin", data=b"x\n")
    target = git(root, "hash-object", "-w", "--stdin", data=b"loop/loop")
    inner = raw_tree(root, [("100644", "config", blob)])
    nfd = "e\u0301.txt"
    entries = [
        ("100644", "ok.txt", blob),
        ("120000", "loop", target),  # a symlink (to itself)
        ("160000", "vendored", "a" * 40),  # a submodule
        ("40000", ".GIT", inner),
        ("100644", "ctl\x01.txt", blob),
        ("100644", nfd, blob),
        ("100644", "\u00e9.txt", blob),
    ]
    tree = raw_tree(root, sorted(entries, key=lambda e: e[1].encode()))
    commit = git(root, "commit-tree", tree, "-m", "hostile")
    git(root, "update-ref", "refs/heads/main", commit)
    return root, ["loop", "vendored", ".GIT/config", "ctl\x01.txt", nfd]
