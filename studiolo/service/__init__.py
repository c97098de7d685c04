"""The one door. Every face (HTTP, MCP, A2A, CLI, dashboard) calls `Coordinator`; every
operation is one transaction on the `Store`."""

from __future__ import annotations

from studiolo.service._base import IdSource, RandomIds, hash_token
from studiolo.service.admin import AdminOps, Issued
from studiolo.service.completion import CompletionOps, CompletionOutcome, make_request
from studiolo.service.content import ArtifactContent, CandidateDraft, ContentOps
from studiolo.service.evidence import EvidenceOps, VerificationItem
from studiolo.service.views import AuditReport, HandoffView, Orientation, TaskView, ViewOps
from studiolo.service.work import WorkOps

__all__ = [
    "ArtifactContent",
    "AuditReport",
    "CandidateDraft",
    "CompletionOutcome",
    "Coordinator",
    "HandoffView",
    "IdSource",
    "Issued",
    "Orientation",
    "RandomIds",
    "TaskView",
    "VerificationItem",
    "hash_token",
    "make_request",
]


class Coordinator(AdminOps, WorkOps, ContentOps, EvidenceOps, CompletionOps, ViewOps):
    """The coordinator: admin, work, content, evidence, completion and views in one door."""
