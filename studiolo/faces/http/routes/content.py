"""Blobs, artifacts (reads and direct edits), collections, candidates, observations."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from studiolo.api import responses as s
from studiolo.api.requests import ArtifactEditIn, CandidateIn, CollectGarbageIn, ObservationIn
from studiolo.core.model import Principal
from studiolo.core.paths import normalize_prefix
from studiolo.faces.http.operation import operation
from studiolo.service import CandidateDraft, Coordinator

__all__: list[str] = []  # the functions are registered by name (`operation`)

PathText = Annotated[str, Field(max_length=1024)]


@operation("put_blob")
async def put_blob(request: Request, caller: Principal, door: Coordinator) -> s.BlobOut:
    data = await request.body()
    digest = await run_in_threadpool(door.put_blob, caller, data)
    return s.BlobOut(digest=digest, size=len(data))


@operation("get_blob")
def get_blob(digest: str, caller: Principal, door: Coordinator) -> Response:
    data = door.get_blob(caller, digest)
    return Response(data, media_type="application/octet-stream", headers={"ETag": f'"{digest}"'})


@operation("collect_garbage")
def collect_garbage(body: CollectGarbageIn, caller: Principal, door: Coordinator) -> s.CollectedOut:
    return s.CollectedOut(collected=door.collect_garbage(caller, body.older_than_seconds))


@operation("artifacts")
def list_artifacts(
    project_id: str, caller: Principal, door: Coordinator, prefix: PathText = ""
) -> list[s.ArtifactOut]:
    return [s.ArtifactOut.model_validate(a) for a in door.list_artifacts(caller, project_id, prefix)]


@operation("artifact")
def read_artifact(
    project_id: str,
    path: str,
    caller: Principal,
    door: Coordinator,
    revision: Annotated[int | None, Field(ge=0, le=2**53)] = None,
) -> s.ArtifactOut:
    return s.ArtifactOut.model_validate(door.read_artifact(caller, project_id, path, revision).artifact)


@operation("edit_artifact")
def edit_artifact(
    project_id: str, path: str, body: ArtifactEditIn, caller: Principal, door: Coordinator
) -> s.ArtifactOut:
    art = door.edit_artifact(caller, project_id, path, body.digest, body.base_revision, body.mode)
    return s.ArtifactOut.model_validate(art)


@operation("collection")
def collection(
    project_id: str, caller: Principal, door: Coordinator, prefix: PathText = ""
) -> s.CollectionOut:
    revision = door.collection_revision(caller, project_id, prefix)
    return s.CollectionOut(project_id=project_id, prefix=normalize_prefix(prefix), revision=revision)


@operation("send_candidate")
def submit_candidate(
    attempt_id: str, body: CandidateIn, caller: Principal, door: Coordinator
) -> s.CandidateOut:
    draft = CandidateDraft(**body.model_dump())
    return s.CandidateOut.model_validate(door.submit_candidate(caller, attempt_id, draft))


@operation("candidate")
def show_candidate(candidate_id: str, caller: Principal, door: Coordinator) -> s.CandidateOut:
    return s.CandidateOut.model_validate(door.candidate(caller, candidate_id))


@operation("observe")
def observe(project_id: str, body: ObservationIn, caller: Principal, door: Coordinator) -> s.ObservationOut:
    obs = door.observe(caller, project_id, body.target, body.kind, body.revision, body.digest)
    return s.ObservationOut.model_validate(obs)


@operation("observations")
def list_observations(
    project_id: str, caller: Principal, door: Coordinator, target: PathText = ""
) -> list[s.ObservationOut]:
    return [s.ObservationOut.model_validate(o) for o in door.observations(caller, project_id, target or None)]
