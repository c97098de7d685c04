"""The git projection's routes (docs/git.md): its status (the read rule) and imports. The
clone endpoint (`git http-backend`) is mounted by `studiolo.git.http`."""

from __future__ import annotations

from fastapi import APIRouter

from studiolo.api import responses as s
from studiolo.api.requests import GitImportIn, GitMirrorIn
from studiolo.faces.http.deps import Caller, Door, SettingsDep
from studiolo.faces.http.operation import operation
from studiolo.git.status import add_mirror, git_status

__all__ = ["router"]

router = APIRouter()


@operation(router, "git_status")
def status(project_id: str, settings: SettingsDep, caller: Caller, door: Door) -> s.GitStatusOut:
    root = settings.git_root()
    return s.GitStatusOut.model_validate(git_status(door, caller, project_id, root))


@operation(router, "git_import")
def import_tree(project_id: str, body: GitImportIn, caller: Caller, door: Door) -> s.GitImportOut:
    files = {p: (f.digest, f.mode) for p, f in body.files.items()}
    return s.GitImportOut.model_validate(door.import_tree(caller, project_id, files, body.source))


@operation(router, "git_mirror")
def mirror(
    project_id: str, body: GitMirrorIn, settings: SettingsDep, caller: Caller, door: Door
) -> s.GitMirrorOut:
    root = settings.git_root()
    return s.GitMirrorOut.model_validate(add_mirror(door, caller, project_id, root, body.url))
