"""Shared by the git tests: a world with a projector, and the ledger's files to compare."""

from __future__ import annotations

from pathlib import Path

from studiolo.core.model import FileMode
from studiolo.git.projector import Projector
from studiolo.git.repository import BRANCH
from tests.world import World


def ledger_files(w: World) -> dict[str, tuple[bytes, FileMode]]:
    """The project's live artifacts: path → (bytes, mode)."""
    out = {}
    for art in w.coord.list_artifacts(w.admin, w.project_id):
        if art.digest is not None:
            out[art.path] = (w.coord.get_blob(w.admin, art.digest), art.mode)
    return out


def branch_files(projector: Projector, project_id: str) -> dict[str, tuple[bytes, FileMode]]:
    repo = projector.repo(project_id)
    return repo.files(repo.tip(BRANCH)[0])


def projector_for(w: World, root: Path) -> Projector:
    return Projector(w.coord.store, root, clock=w.clock)
