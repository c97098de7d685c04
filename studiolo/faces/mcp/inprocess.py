"""`StudioloPort` over a `Coordinator` in this process: the caller is the principal of the
bearer token (resolved by the face), never an argument."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from studiolo._exceptions import InvalidRequest
from studiolo.api import responses as s
from studiolo.api.requests import CandidateIn, CompleteIn
from studiolo.core.model import Principal
from studiolo.core.paths import normalize_prefix
from studiolo.faces import render
from studiolo.service import CandidateDraft, Coordinator, make_request

__all__ = ["InProcessPort"]


class InProcessPort:
    def __init__(self, coordinator: Coordinator, caller: Principal, project_id: str | None = None) -> None:
        self.door = coordinator
        self.caller = caller
        project = project_id or caller.project_id
        if project is None:
            raise InvalidRequest("a service admin token needs a project")
        self.project_id = project

    def orientation(self) -> s.OrientationOut:
        return s.OrientationOut.model_validate(self.door.orient(self.caller, self.project_id))

    def tasks(self, status: str | None, limit: int, offset: int) -> list[s.TaskSummaryOut]:
        views = self.door.list_task_views(self.caller, self.project_id, status, limit, offset)
        return [render.task_summary(v) for v in views]

    def task(self, task_id: str) -> s.TaskViewOut:
        return render.task_view(self.door.task_view(self.caller, task_id))

    def claim(self, task_id: str, lease_seconds: float | None) -> s.AttemptOut:
        return s.AttemptOut.model_validate(self.door.claim(self.caller, task_id, lease_seconds))

    def heartbeat(self, attempt_id: str, lease_seconds: float | None) -> s.AttemptOut:
        return s.AttemptOut.model_validate(self.door.heartbeat(self.caller, attempt_id, lease_seconds))

    def release(self, attempt_id: str) -> s.AttemptOut:
        return s.AttemptOut.model_validate(self.door.release(self.caller, attempt_id))

    def attempt(self, attempt_id: str) -> s.AttemptOut:
        return s.AttemptOut.model_validate(self.door.attempt(self.caller, attempt_id))

    def artifacts(self, prefix: str) -> list[s.ArtifactOut]:
        return [
            s.ArtifactOut.model_validate(a)
            for a in self.door.list_artifacts(self.caller, self.project_id, prefix)
        ]

    def artifact(self, path: str, revision: int | None) -> s.ArtifactOut:
        content = self.door.read_artifact(self.caller, self.project_id, path, revision)
        return s.ArtifactOut.model_validate(content.artifact)

    def collection(self, prefix: str) -> s.CollectionOut:
        revision = self.door.collection_revision(self.caller, self.project_id, prefix)
        return s.CollectionOut(project_id=self.project_id, prefix=normalize_prefix(prefix), revision=revision)

    def get_blob(self, digest: str) -> bytes:
        return self.door.get_blob(self.caller, digest)

    def put_blob(self, data: bytes) -> str:
        return self.door.put_blob(self.caller, data)

    def submit_candidate(self, attempt_id: str, draft: CandidateIn) -> s.CandidateOut:
        cand = self.door.submit_candidate(self.caller, attempt_id, CandidateDraft(**draft.model_dump()))
        return s.CandidateOut.model_validate(cand)

    def candidate(self, candidate_id: str) -> s.CandidateOut:
        return s.CandidateOut.model_validate(self.door.candidate(self.caller, candidate_id))

    def receipts(self, candidate_id: str) -> list[s.ReceiptOut]:
        return [render.receipt(r) for r in self.door.receipt_reads(self.caller, candidate_id)]

    def complete(self, task_id: str, request: CompleteIn) -> tuple[s.CompletionOut, bool]:
        outcome = self.door.complete(self.caller, make_request(task_id=task_id, **request.model_dump()))
        return s.CompletionOut.model_validate(outcome.completion), outcome.replay

    def handoff(
        self, attempt_id: str, artifacts: Mapping[str, int], obligations: Sequence[str], notes: str
    ) -> s.HandoffOut:
        h = self.door.handoff(
            self.caller, attempt_id, artifacts=artifacts, obligations=obligations, notes=notes
        )
        return s.HandoffOut.model_validate(h)

    def handoff_view(self, task_id: str) -> s.HandoffViewOut:
        return s.HandoffViewOut.model_validate(self.door.handoff_view(self.caller, task_id))

    def events(self, after: int, limit: int) -> list[s.EventOut]:
        return [
            s.EventOut.model_validate(e) for e in self.door.events(self.caller, self.project_id, after, limit)
        ]
