"""Blobs, artifacts (reads and direct edits), collections, candidates, observations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from studiolo.api import responses as s
from studiolo.api.requests import ArtifactEditIn, CandidateIn, CollectGarbageIn, ObservationIn
from studiolo.core.paths import normalize_prefix
from studiolo.faces.http.deps import Caller, Door
from studiolo.faces.http.rendered import RenderedRoute
from studiolo.service import CandidateDraft

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["content"], route_class=RenderedRoute)

_BINARY: dict[str, Any] = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
PathText = Annotated[str, Query(max_length=1024)]


class OctetStream(Response):
    media_type = "application/octet-stream"


@router.post(
    "/blobs",
    status_code=201,
    summary="Stage immutable bytes (raw body); returns the SHA-256 digest",
    openapi_extra={"requestBody": {"required": True, "content": _BINARY}},
)
async def put_blob(request: Request, caller: Caller, door: Door) -> s.BlobOut:
    data = await request.body()
    digest = await run_in_threadpool(door.put_blob, caller, data)
    return s.BlobOut(digest=digest, size=len(data))


@router.get(
    "/blobs/{digest}",
    response_class=OctetStream,
    responses={200: {"content": _BINARY, "description": "the bytes"}},
)
def get_blob(digest: str, caller: Caller, door: Door) -> Response:
    return OctetStream(door.get_blob(caller, digest), headers={"ETag": f'"{digest}"'})


@router.post(
    "/blobs/collect",
    summary="Delete the blobs nothing references, staged over `older_than_seconds` ago (service admins)",
)
def collect_garbage(body: CollectGarbageIn, caller: Caller, door: Door) -> s.CollectedOut:
    return s.CollectedOut(collected=door.collect_garbage(caller, body.older_than_seconds))


@router.get("/projects/{project_id}/artifacts", summary="Current artifacts under a prefix")
def list_artifacts(project_id: str, caller: Caller, door: Door, prefix: PathText = "") -> list[s.ArtifactOut]:
    return [s.ArtifactOut.model_validate(a) for a in door.list_artifacts(caller, project_id, prefix)]


@router.get(
    "/projects/{project_id}/artifacts/{path:path}",
    summary="An artifact's current (or a past) revision; its bytes are at /v1/blobs/{digest}",
)
def read_artifact(
    project_id: str,
    path: str,
    caller: Caller,
    door: Door,
    revision: Annotated[int | None, Query(ge=0, le=2**53)] = None,
) -> s.ArtifactOut:
    return s.ArtifactOut.model_validate(door.read_artifact(caller, project_id, path, revision).artifact)


@router.put(
    "/projects/{project_id}/artifacts/{path:path}",
    summary="A direct edit: compare-and-swap on the path's revision",
)
def edit_artifact(
    project_id: str, path: str, body: ArtifactEditIn, caller: Caller, door: Door
) -> s.ArtifactOut:
    art = door.edit_artifact(caller, project_id, path, body.digest, body.base_revision, body.mode)
    return s.ArtifactOut.model_validate(art)


@router.get("/projects/{project_id}/collections", summary="The collection revision of a prefix")
def collection(project_id: str, caller: Caller, door: Door, prefix: PathText = "") -> s.CollectionOut:
    revision = door.collection_revision(caller, project_id, prefix)
    return s.CollectionOut(project_id=project_id, prefix=normalize_prefix(prefix), revision=revision)


@router.post(
    "/attempts/{attempt_id}/candidates",
    status_code=201,
    summary="Submit immutable candidate bytes with their bases and declared dependencies",
)
def submit_candidate(attempt_id: str, body: CandidateIn, caller: Caller, door: Door) -> s.CandidateOut:
    draft = CandidateDraft(**body.model_dump())
    return s.CandidateOut.model_validate(door.submit_candidate(caller, attempt_id, draft))


@router.get("/candidates/{candidate_id}")
def show_candidate(candidate_id: str, caller: Caller, door: Door) -> s.CandidateOut:
    return s.CandidateOut.model_validate(door.candidate(caller, candidate_id))


@router.post("/projects/{project_id}/observations", status_code=201, summary="Record a historical fact")
def observe(project_id: str, body: ObservationIn, caller: Caller, door: Door) -> s.ObservationOut:
    obs = door.observe(caller, project_id, body.target, body.kind, body.revision, body.digest)
    return s.ObservationOut.model_validate(obs)


@router.get("/projects/{project_id}/observations")
def list_observations(
    project_id: str, caller: Caller, door: Door, target: PathText = ""
) -> list[s.ObservationOut]:
    return [s.ObservationOut.model_validate(o) for o in door.observations(caller, project_id, target or None)]
