"""The git projection's routes (docs/git.md): its status (the read rule) and imports. The
clone endpoint (`git http-backend`) is mounted by `studiolo.git.http`."""

from __future__ import annotations

from studiolo.api import responses as s
from studiolo.api.requests import GitImportIn, GitMirrorIn
from studiolo.core.model import Principal
from studiolo.faces.http.operation import operation
from studiolo.git.status import add_mirror, git_status
from studiolo.service import Coordinator
from studiolo.settings import Settings

__all__: list[str] = []  # the functions are registered by name (`operation`)


@operation("git_status")
def status(project_id: str, settings: Settings, caller: Principal, door: Coordinator) -> s.GitStatusOut:
    root = settings.git_root()
    return s.GitStatusOut.model_validate(git_status(door, caller, project_id, root))


@operation("git_import")
def import_tree(project_id: str, body: GitImportIn, caller: Principal, door: Coordinator) -> s.GitImportOut:
    files = {p: (f.digest, f.mode) for p, f in body.files.items()}
    return s.GitImportOut.model_validate(door.import_tree(caller, project_id, files, body.source))


@operation("git_mirror")
def mirror(
    project_id: str, body: GitMirrorIn, settings: Settings, caller: Principal, door: Coordinator
) -> s.GitMirrorOut:
    root = settings.git_root()
    return s.GitMirrorOut.model_validate(add_mirror(door, caller, project_id, root, body.url))
