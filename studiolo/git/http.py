"""Serving the projection: the projector runs for the app's lifetime, and `git clone`
reads the repositories through git's own `git http-backend` under `/git/<project>.git`;
a push goes through the same program into a quarantine whose hook asks the door (push.py).
Authentication is the bearer token, sent as a header (`http.extraHeader`) or as the
password of HTTP Basic; only principals who may read the whole project may clone or push
(docs/git.md, "Reading", "Writing through git")."""

from __future__ import annotations

import base64
import binascii
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pygit2
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from studiolo._exceptions import StudioloError
from studiolo.core.model import Principal
from studiolo.git.child import ProjectorProcess
from studiolo.git.pktline import RESULT_TYPE, refused_push
from studiolo.git.projector import Projector, repository_path
from studiolo.git.push import quarantine
from studiolo.git.receive import Receiver
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Tx
from studiolo.workers.lifetime import for_app_lifetime

__all__ = ["mount_git"]

_SERVICES = {"git-upload-pack", "git-receive-pack"}  # a push goes to a quarantine (push.py)
_PATHS = re.compile(r"^(info/refs|git-upload-pack|git-receive-pack|HEAD)$")
_MAX_BODY = 16 * 1024 * 1024  # a request's body: a push's pack, a fetch's negotiation
_DRAIN = 4 * _MAX_BODY  # read and dropped past the cap, so that the client reads the refusal
_BASIC = {"WWW-Authenticate": 'Basic realm="studiolo"'}


def mount_git(app: Any, door: Coordinator, settings: Settings) -> Projector | None:
    """Run the projector with the app and serve clones, if the service publishes git."""
    root = settings.git_root()
    if root is None:
        return None
    projector = Projector(
        door.store,
        root,
        interval=settings.git_interval_seconds,
        checkpoint_every=settings.git_checkpoint_seconds,
    )
    app.state.projector = projector  # publishes on demand here (a clone, a push)
    background = ProjectorProcess(
        door.store, root, settings.git_interval_seconds, settings.git_checkpoint_seconds
    )
    for_app_lifetime(app, background)  # its first pass replays whatever a crash left unpublished

    async def endpoint(request: Request) -> Response:
        return await _serve(request, door, projector, root)

    app.router.routes.insert(0, Route("/git/{repo}/{rest:path}", endpoint, methods=["GET", "POST"]))
    return projector


def _token(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return value.strip() or None
    if scheme.lower() == "basic":
        try:
            _user, _, password = base64.b64decode(value.strip()).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or None
    return None


def _refusal(door: Coordinator, caller: Principal, project_id: str) -> str | None:
    """None if the caller may read every path of the project; else why it may not clone."""

    def run(tx: Tx) -> str | None:
        if not door.sees_project(tx, caller, project_id):
            return f"project {project_id} not found"
        if door.path_reader(tx, caller, project_id) is not None:
            return (
                f"{caller.name} may read only part of project {project_id}, and a clone holds all of it;"
                " use `studiolo checkout` for the paths your grant covers"
            )
        return None

    return door.store.read(run)


async def _serve(request: Request, door: Coordinator, projector: Projector, root: Path) -> Response:
    name, rest = request.path_params["repo"], request.path_params["rest"]
    service = request.query_params.get("service", "")
    if (
        not name.endswith(".git")
        or not _PATHS.match(rest)
        or (rest == "info/refs" and service not in _SERVICES)
    ):
        return PlainTextResponse("this service serves git's smart HTTP protocol only\n", status_code=403)
    project_id = name.removesuffix(".git")
    token = _token(request)
    if token is None:
        return PlainTextResponse("a Studiolo token is required (as the password)\n", 401, headers=_BASIC)
    try:
        caller = await run_in_threadpool(door.authenticate, token)
        refusal = await run_in_threadpool(_refusal, door, caller, project_id)
    except StudioloError as exc:
        return PlainTextResponse(f"{exc.detail}\n", exc.status, headers=_BASIC if exc.status == 401 else None)
    if refusal is not None:
        status = 404 if refusal.endswith("not found") else 403
        return PlainTextResponse(refusal + "\n", status_code=status)
    if rest == "info/refs":
        await run_in_threadpool(projector.publish, project_id)  # a clone sees the ledger's last change
    if not (repository_path(root, project_id) / "HEAD").is_file():
        return PlainTextResponse(f"project {project_id} has published nothing yet\n", status_code=404)
    body, size = await _bounded_body(request, _MAX_BODY)
    if size > _MAX_BODY:
        if rest != "git-receive-pack":
            return PlainTextResponse("request too large\n", status_code=413)
        return Response(refused_push(body, _too_large(size)), media_type=RESULT_TYPE)
    path = f"/{name}/{rest}"
    if rest == "git-receive-pack" or service == "git-receive-pack":
        return await run_in_threadpool(_receive, request, door, projector, project_id, path, body, caller)
    return await run_in_threadpool(_backend, request, root, path, body, caller)


async def _bounded_body(request: Request, cap: int) -> tuple[bytes, int]:
    """The body up to `cap` bytes, and its size. Past the cap the rest is read and dropped
    (up to `_DRAIN`), so the client reads the answer instead of a broken connection."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        if size < cap:
            chunks.append(chunk[: cap - size])
        size += len(chunk)
        if size > _DRAIN:
            break
    return b"".join(chunks), size


def _too_large(size: int) -> str:
    more = f"over {_DRAIN >> 20}" if size > _DRAIN else f"{size / (1 << 20):.1f}"
    return (
        f"the push is {more} MiB, over the {_MAX_BODY >> 20} MiB one push request may carry;"
        " nothing was applied\npush fewer or smaller files at a time"
    )


def _receive(
    request: Request,
    door: Coordinator,
    projector: Projector,
    project_id: str,
    path: str,
    body: bytes,
    caller: Principal,
) -> Response:
    """A push, into a throwaway repository whose hook asks the door (push.py)."""

    def published() -> pygit2.Repository:
        projector.publish(project_id)  # the head a push is checked against is the ledger's latest
        return projector.repo(project_id).repo

    receiver = Receiver(door, caller, project_id, published)
    with quarantine(repository_path(projector.root, project_id), receiver.receive, _MAX_BODY) as root:
        return _backend(request, root, path, body, caller)


def _backend(request: Request, root: Path, path: str, body: bytes, caller: Principal) -> Response:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": str(root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": path,
        "QUERY_STRING": request.url.query,
        "REQUEST_METHOD": request.method,
        "CONTENT_TYPE": request.headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_USER": caller.id,
        "REMOTE_ADDR": request.client.host if request.client else "",
        "HTTP_GIT_PROTOCOL": request.headers.get("git-protocol", ""),
        "HTTP_CONTENT_ENCODING": request.headers.get("content-encoding", ""),
    }
    done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=600)
    head, _, payload = done.stdout.partition(b"\r\n\r\n")
    if not _ and b"\n\n" in done.stdout:
        head, _, payload = done.stdout.partition(b"\n\n")
    status, headers = 200, {}
    for line in head.decode("latin-1").splitlines():
        key, _, value = line.partition(":")
        if key.lower() == "status":
            status = int(value.strip().split()[0])
        elif key:
            headers[key.strip()] = value.strip()
    return Response(payload, status_code=status, headers=headers)
