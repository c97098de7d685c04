"""The read rule (docs/git.md): which ledger version a project's branch reflects, and
whether it lags. Every face that shows a commit says this with it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from studiolo._exceptions import NotFound
from studiolo.core.model import Action, Principal
from studiolo.core.reasons import ErrorReason
from studiolo.git.mirrors import Mirror, Mirrors, check_url
from studiolo.git.projector import repository_path
from studiolo.git.repository import BRANCH, CHECKPOINTS, NOTES, GitRepo
from studiolo.service import Coordinator
from studiolo.store import Tx

__all__ = ["GitStatus", "add_mirror", "git_status"]


@dataclass(frozen=True)
class GitStatus:
    project_id: str
    branch: str
    commit: str | None  # the branch's tip; None before the first publication
    published_version: int  # the ledger version the tip reflects
    ledger_version: int  # the project's last publication in the ledger
    pending: int  # publications the branch does not reflect yet
    current: bool  # the tip reflects the ledger's last change to the artifacts
    notes_version: int
    checkpoint: str | None  # the last signed checkpoint of the audit chain head
    mirrors: list[Mirror]  # each with what it holds (its lag) and its last error


def git_status(door: Coordinator, caller: Principal, project_id: str, root: Path | None) -> GitStatus:
    """The branch against the ledger, for a caller who may read the project."""
    if root is None:
        raise NotFound(
            "this service publishes no git repositories (docs/git.md)", reason=ErrorReason.NOT_FOUND
        )
    path = repository_path(root, project_id)
    repo = GitRepo(path) if (path / "HEAD").is_file() else None
    tip, published = repo.tip(BRANCH) if repo else (None, 0)

    def run(tx: Tx) -> tuple[int, int]:
        door.require_project(tx, caller, project_id)
        door.require(tx, caller, project_id, Action.READ)
        return tx.publications.head(project_id), tx.publications.pending(project_id, published)

    head, pending = door.store.read(run)
    return GitStatus(
        project_id=project_id,
        branch=BRANCH.removeprefix("refs/heads/"),
        commit=str(tip) if tip is not None else None,
        published_version=published,
        ledger_version=head,
        pending=pending,
        current=pending == 0 and published == head,  # ahead of the ledger: a restore went back
        notes_version=repo.tip(NOTES)[1] if repo else 0,
        checkpoint=str(repo.tip(CHECKPOINTS)[0]) if repo and repo.tip(CHECKPOINTS)[0] else None,
        mirrors=Mirrors.list(repo) if repo else [],
    )


def add_mirror(door: Coordinator, caller: Principal, project_id: str, root: Path | None, url: str) -> Mirror:
    """Push every publication of the project to `url` too (a project admin's; a local path:
    a service admin's). Audited in the project's chain."""
    if root is None:
        raise NotFound("this service publishes no git repositories (docs/git.md)")
    url = check_url(url, caller.is_service_admin)

    def run(tx: Tx) -> None:
        door.require_project(tx, caller, project_id)
        door.require(tx, caller, project_id, Action.ADMIN)
        door.audit(tx, project_id, "git.mirror_added", caller, None, url=url)

    door.write_in(project_id, run)
    repo = GitRepo(repository_path(root, project_id))
    name = Mirrors.add(repo, url)
    return next(m for m in Mirrors.list(repo) if m.name == name)
