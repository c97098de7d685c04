"""`studiolo checkout --git`, `studiolo submit` and MCP on a git working tree: the client side of
`studiolo.git.worktree`, through the HTTP API (docs/git.md, "Agents work in git")."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from studiolo.api import responses as s
from studiolo.client import Client
from studiolo.git import worktree

__all__ = ["checkout_git", "rebase_git", "submit_git"]


def checkout_git(c: Client, url: str, token: str | None, directory: Path, project: str) -> dict[str, Any]:
    """Clone the project's published branch, with the manifest of the revisions it holds."""
    status = c.git_status(project=project).model_dump()
    repo_url = f"{url.rstrip('/')}/git/{quote(project, safe='')}.git"
    artifacts = {a.path: (a.revision, a.digest) for a in c.artifacts("", project=project) if a.digest}
    return worktree.checkout(repo_url, token, directory, artifacts, status)


def submit_git(
    c: Client, attempt_id: str, directory: Path, named: list[str], collections: list[str]
) -> s.CandidateOut:
    """A candidate from the work tree against its base commit; reads: `named` paths (their
    base revisions), else the unchanged files beside the changed ones."""
    manifest = worktree.read_manifest(directory)
    project = manifest["project_id"]
    found = worktree.changes(directory)
    if not found.writes and not found.deletes:
        raise ValueError(f"nothing changed in {directory} since {manifest['base_commit'][:12]}")
    files: dict[str, str | None] = {p: c.put_blob(data).digest for p, data in found.writes.items()}
    files.update(dict.fromkeys(found.deletes))
    base: dict[str, Any] = manifest["files"]
    if named:
        deps = {p: base[p]["revision"] if p in base else c.revision(p, project=project) for p in named}
    else:
        deps = found.unchanged_near
    dirs = {p: c.collection(p, project=project).revision for p in collections}
    return c.submit_candidate(attempt_id, files, found.bases, deps, dirs, found.modes)


def rebase_git(c: Client, token: str | None, directory: Path) -> worktree.Rebased:
    """`worktree.rebase` with the project's status and current artifacts from the API."""
    project = worktree.read_manifest(directory)["project_id"]
    status = c.git_status(project=project).model_dump()

    def artifacts() -> dict[str, tuple[int, str]]:
        return {a.path: (a.revision, a.digest) for a in c.artifacts("", project=project) if a.digest}

    return worktree.rebase(directory, token, artifacts, status)
