"""What the MCP tools need from Studiolo, as one small protocol with two adapters:
`InProcessPort` (a `Coordinator` in this process, caller from the bearer token) and
`RemotePort` (the HTTP API through `studiolo.client.Client`).

Every method returns the wire models the HTTP API returns, so a tool's structured output is
the same over both adapters; every refusal is raised as a `StudioloError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from studiolo.api import responses as s
from studiolo.api.requests import CandidateIn, CompleteIn

__all__ = ["GitPort", "StudioloPort"]


class StudioloPort(Protocol):
    def orientation(self) -> s.OrientationOut:
        """Who the caller is, the pinned policy, its grants, the open tasks, its attempts."""
        ...

    def tasks(self, status: str | None, limit: int, offset: int) -> list[s.TaskSummaryOut]:
        """A page of the project's tasks (oldest first) with their strongest established fact."""
        ...

    def task(self, task_id: str) -> s.TaskViewOut:
        """One task: contract, fact, attempts, candidates, receipts, completion, rejections."""
        ...

    def claim(self, task_id: str, lease_seconds: float | None) -> s.AttemptOut: ...

    def heartbeat(self, attempt_id: str, lease_seconds: float | None) -> s.AttemptOut: ...

    def release(self, attempt_id: str) -> s.AttemptOut: ...

    def attempt(self, attempt_id: str) -> s.AttemptOut: ...

    def artifacts(self, prefix: str) -> list[s.ArtifactOut]: ...

    def artifact(self, path: str, revision: int | None) -> s.ArtifactOut: ...

    def collection(self, prefix: str) -> s.CollectionOut: ...

    def get_blob(self, digest: str) -> bytes:
        """Immutable bytes by digest, checked against the digest."""
        ...

    def put_blob(self, data: bytes) -> str:
        """Store bytes; return their digest."""
        ...

    def submit_candidate(self, attempt_id: str, draft: CandidateIn) -> s.CandidateOut: ...

    def candidate(self, candidate_id: str) -> s.CandidateOut: ...

    def receipts(self, candidate_id: str) -> list[s.ReceiptOut]: ...

    def complete(self, task_id: str, request: CompleteIn) -> tuple[s.CompletionOut, bool]:
        """The completion request; `(completion, replay)`. A refusal raises `CompletionRejected`."""
        ...

    def handoff(
        self, attempt_id: str, artifacts: Mapping[str, int], obligations: Sequence[str], notes: str
    ) -> s.HandoffOut: ...

    def handoff_view(self, task_id: str) -> s.HandoffViewOut: ...

    def events(self, after: int, limit: int) -> list[s.EventOut]:
        """A page of the project's audit events with `seq > after`, oldest first."""
        ...


@runtime_checkable
class GitPort(Protocol):
    """What a git workspace needs besides (`RemotePort`: the stdio server; docs/git.md)."""

    def checkout_git(self, directory: Path) -> dict[str, Any]: ...

    def submit_git(
        self, attempt_id: str, directory: Path, named: list[str], collections: list[str]
    ) -> s.CandidateOut: ...
