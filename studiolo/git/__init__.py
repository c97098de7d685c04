"""The git projection of the ledger (docs/git.md): every change to a project's artifacts
becomes one commit in a bare repository Studiolo owns. The ledger is the authority; this
package only reads it (the publication log), and nothing outside it speaks git."""

from __future__ import annotations

from studiolo.git.projector import Projector, repository_path
from studiolo.git.repository import BRANCH, CHECKPOINTS, NOTES, GitRepo

__all__ = ["BRANCH", "CHECKPOINTS", "NOTES", "GitRepo", "Projector", "repository_path"]
