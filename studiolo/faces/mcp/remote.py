"""`StudioloPort` over the HTTP API, through `studiolo.client.Client` (the stdio server on an
agent's machine). The caller is whoever `STUDIOLO_TOKEN` authenticates as."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from studiolo.api import responses as s
from studiolo.api.requests import CandidateIn, CompleteIn
from studiolo.client import Client

__all__ = ["RemotePort"]


class RemotePort:
    def __init__(
        self,
        client: Client,
        project_id: str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
    ) -> None:
        self.client = client
        self._project = project_id
        self.url, self.token = url, token  # where `git clone` reaches the service (a git workspace)

    def checkout_git(self, directory: Path) -> dict[str, Any]:
        """Clone the published branch into `directory`, with the manifest (docs/git.md)."""
        from studiolo.git.agent import checkout_git

        if self.url is None:
            raise ValueError("this MCP server was started without the service's URL: no git checkout")
        return checkout_git(self.client, self.url, self.token, directory, self.project_id)

    def submit_git(
        self, attempt_id: str, directory: Path, named: list[str], collections: list[str]
    ) -> s.CandidateOut:
        """A candidate from a git work tree against its base commit (docs/git.md)."""
        from studiolo.git.agent import submit_git

        return submit_git(self.client, attempt_id, directory, named, collections)

    @property
    def project_id(self) -> str:
        """The named project, else the token's own (one request to `/v1/me`, remembered)."""
        if self._project is None:
            self._project = self.client.project_id()
        return self._project

    def orientation(self) -> s.OrientationOut:
        return self.client.orientation(self.project_id)

    def tasks(self, status: str | None, limit: int, offset: int) -> list[s.TaskSummaryOut]:
        return self.client.tasks(status, limit, offset, project=self.project_id)

    def task(self, task_id: str) -> s.TaskViewOut:
        return self.client.task(task_id)

    def claim(self, task_id: str, lease_seconds: float | None) -> s.AttemptOut:
        return self.client.claim(task_id, lease_seconds)

    def heartbeat(self, attempt_id: str, lease_seconds: float | None) -> s.AttemptOut:
        return self.client.heartbeat(attempt_id, lease_seconds)

    def release(self, attempt_id: str) -> s.AttemptOut:
        return self.client.release(attempt_id)

    def attempt(self, attempt_id: str) -> s.AttemptOut:
        return self.client.attempt(attempt_id)

    def artifacts(self, prefix: str) -> list[s.ArtifactOut]:
        return self.client.artifacts(prefix, project=self.project_id)

    def artifact(self, path: str, revision: int | None) -> s.ArtifactOut:
        return self.client.artifact(path, revision, project=self.project_id)

    def collection(self, prefix: str) -> s.CollectionOut:
        return self.client.collection(prefix, project=self.project_id)

    def get_blob(self, digest: str) -> bytes:
        return self.client.get_blob(digest)

    def put_blob(self, data: bytes) -> str:
        return self.client.put_blob(data).digest

    def submit_candidate(self, attempt_id: str, draft: CandidateIn) -> s.CandidateOut:
        return self.client.send_candidate(attempt_id, draft)

    def candidate(self, candidate_id: str) -> s.CandidateOut:
        return self.client.candidate(candidate_id)

    def receipts(self, candidate_id: str) -> list[s.ReceiptOut]:
        return self.client.receipts(candidate_id)

    def complete(self, task_id: str, request: CompleteIn) -> tuple[s.CompletionOut, bool]:
        done = self.client.send_completion(task_id, request)
        return done.completion, done.replay

    def handoff(
        self, attempt_id: str, artifacts: Mapping[str, int], obligations: Sequence[str], notes: str
    ) -> s.HandoffOut:
        return self.client.handoff(attempt_id, artifacts=artifacts, obligations=obligations, notes=notes)

    def handoff_view(self, task_id: str) -> s.HandoffViewOut:
        return self.client.handoff_view(task_id)

    def events(self, after: int, limit: int) -> list[s.EventOut]:
        return self.client.events(after, limit, project=self.project_id)

    def close(self) -> None:
        self.client.close()
