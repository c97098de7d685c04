"""An agent's git working tree (docs/git.md, "Agents work in git"), through the `git`
binary (no pygit2 on the agent's machine).

`checkout` clones the project's published branch and records, in
`.git/studiolo-checkout.json` (never tracked), the base commit and each file's ledger
revision and digest, checked against the clone's bytes: a ledger that moved during the
checkout is noticed, not recorded. `changes` derives a candidate from the tree against its
base commit: adds, edits, deletes and renames (a rename writes both paths), untracked files
included, ignored files not."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studiolo.core.enums import FileMode

__all__ = [
    "MANIFEST",
    "Rebased",
    "WorkTreeChanges",
    "changes",
    "checkout",
    "is_git_checkout",
    "read_manifest",
    "rebase",
]

MANIFEST = "studiolo-checkout.json"  # under .git/


def _git(cwd: Path, *args: str, header: str | None = None, env: dict[str, str] | None = None) -> bytes:
    pre = ["-c", f"http.extraHeader={header}"] if header else []
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    done = subprocess.run(["git", *pre, *args], cwd=cwd, capture_output=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_git_checkout(directory: Path) -> bool:
    return (directory / ".git" / MANIFEST).is_file()


def read_manifest(directory: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((directory / ".git" / MANIFEST).read_text())
    return manifest


def _tree(directory: Path, commit: str) -> dict[str, tuple[str, str]]:
    """path → (git mode, blob id) of a commit's tree."""
    out = {}
    for item in _git(directory, "ls-tree", "-r", "-z", commit).split(b"\0"):
        if item:
            meta, _, path = item.partition(b"\t")
            mode, _kind, oid = meta.decode().split()
            out[path.decode()] = (mode, oid)
    return out


def _record(
    directory: Path, head: str, artifacts: dict[str, tuple[int, str]], status: dict[str, Any]
) -> dict[str, Any]:
    """The manifest of the work tree at `head` (checked out, unchanged): each file's ledger
    revision, its digest checked against the bytes; raises if the ledger moved meanwhile."""
    files: dict[str, dict[str, Any]] = {}
    moved = []
    for path in _tree(directory, head):
        digest = _digest((directory / path).read_bytes())
        revision, current = artifacts.get(path, (0, ""))
        if current != digest:
            moved.append(path)
        files[path] = {"revision": revision, "digest": digest}
    moved += [p for p in artifacts if p not in files]
    if moved:
        raise RuntimeError(
            f"the ledger moved while checking out ({sorted(moved)[:5]} differ from {head[:12]}); run again"
        )
    manifest = {"project_id": status["project_id"], "base_commit": head, "files": files}
    manifest["published_version"] = status["published_version"]
    (directory / ".git" / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def checkout(
    url: str,
    token: str | None,
    directory: Path,
    artifacts: dict[str, tuple[int, str]],
    status: dict[str, Any],
) -> dict[str, Any]:
    """Clone `url` into `directory` and record the manifest; `artifacts`: the ledger's
    path → (revision, digest), read after the clone. Raises if they disagree."""
    header = f"Authorization: Bearer {token}" if token else None
    _git(Path.cwd(), "clone", "-q", url, str(directory), header=header)
    head = _git(directory, "rev-parse", "HEAD").decode().strip()
    return _record(directory, head, artifacts, status)


@dataclass(frozen=True)
class Rebased:
    base: str  # the published commit the change now sits on
    conflicts: list[str]  # files left with conflict markers
    ours: str  # the agent's change before the rebase, kept as a commit


def rebase(
    directory: Path,
    token: str | None,
    artifacts: Callable[[], dict[str, tuple[int, str]]],
    status: dict[str, Any],
) -> Rebased:
    """Three-way merge the work tree's change onto the current published commit with git's
    own `merge-tree`; the work tree ends on the new base with the change (and any conflict
    markers) uncommitted, and the manifest names the new base."""
    manifest = read_manifest(directory)
    base = manifest["base_commit"]
    header = f"Authorization: Bearer {token}" if token else None
    index = directory / ".git" / "studiolo-rebase-index"
    env = {"GIT_INDEX_FILE": str(index)}
    _git(directory, "add", "-A", ".", env=env)  # tracked and untracked, not ignored
    tree = _git(directory, "write-tree", env=env).decode().strip()
    index.unlink(missing_ok=True)
    ours = _git(directory, "commit-tree", tree, "-p", base, "-m", "studiolo: the change before rebase")
    ours_id = ours.decode().strip()
    _git(directory, "fetch", "-q", "origin", header=header)
    theirs = _git(directory, "rev-parse", "FETCH_HEAD").decode().strip()
    merged = subprocess.run(
        ["git", "merge-tree", "--write-tree", "--name-only", "--no-messages", ours_id, theirs],
        cwd=directory,
        capture_output=True,
    )
    if merged.returncode not in (0, 1):
        raise RuntimeError(f"git merge-tree failed: {merged.stderr.decode(errors='replace').strip()}")
    lines = merged.stdout.decode().splitlines()
    conflicts = sorted(set(lines[1:])) if merged.returncode == 1 else []
    _git(directory, "reset", "-q", "--hard", theirs)
    _git(directory, "clean", "-q", "-f", "-d")  # untracked, not ignored: they are in `ours`
    _record(directory, theirs, artifacts(), status)
    _git(directory, "read-tree", "-u", "-m", theirs, lines[0])
    _git(directory, "reset", "-q")  # the index back on the new base: the change stays in the files
    return Rebased(theirs, conflicts, ours_id)


@dataclass
class WorkTreeChanges:
    writes: dict[str, bytes] = field(default_factory=dict)  # path → new bytes (adds, edits, renames' targets)
    deletes: list[str] = field(default_factory=list)
    modes: dict[str, FileMode] = field(default_factory=dict)  # written path → its work tree mode
    bases: dict[str, int] = field(default_factory=dict)
    unchanged_near: dict[str, int] = field(default_factory=dict)  # the default reads: see `changes`


def changes(directory: Path) -> WorkTreeChanges:
    """The candidate a git working tree makes against its base commit. The default reads
    are the unchanged files in the directories the change touches (docs/git.md)."""
    manifest = read_manifest(directory)
    base: dict[str, Any] = manifest["files"]
    base_tree = _tree(directory, manifest["base_commit"])
    listed = _git(directory, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    present = {}
    for raw in listed.split(b"\0"):
        path = raw.decode()
        full = directory / path
        if not raw or not os.path.lexists(full):
            continue  # deleted in the work tree
        info = full.lstat()
        if stat.S_ISLNK(info.st_mode):
            raise ValueError(f"{path} is a symbolic link: Studiolo holds files only")
        present[path] = info
    out = WorkTreeChanges()
    for path, info in sorted(present.items()):
        data = (directory / path).read_bytes()
        mode = FileMode.EXECUTABLE if info.st_mode & stat.S_IXUSR else FileMode.REGULAR
        was = FileMode.EXECUTABLE if base_tree.get(path, ("",))[0] == "100755" else FileMode.REGULAR
        # a changed executable bit is a change of its own, equal bytes or not
        if path not in base or base[path]["digest"] != _digest(data) or mode is not was:
            out.writes[path] = data
            out.modes[path] = mode
            out.bases[path] = base[path]["revision"] if path in base else 0
    for path, entry in base.items():
        if path not in present:
            out.deletes.append(path)
            out.bases[path] = entry["revision"]
    touched = {str(Path(p).parent) for p in [*out.writes, *out.deletes]}
    out.unchanged_near = {
        p: e["revision"] for p, e in base.items() if p not in out.bases and str(Path(p).parent) in touched
    }
    return out
