"""The one door. Every face (HTTP, MCP, A2A, CLI, dashboard) calls `Coordinator`; every
operation is one transaction on the `Store`."""

from __future__ import annotations

from studiolo.service._ids import IdSource, RandomIds, hash_token
from studiolo.service.a2a import A2AOps, DelegatedView, DelegationRequest, PublishedFile
from studiolo.service.admin import AdminOps, Issued
from studiolo.service.completion import CompletionOps, CompletionOutcome, make_request
from studiolo.service.content import ArtifactContent, CandidateDraft, ContentOps
from studiolo.service.dashboard import DashboardOps, TaskListPage, TaskPage
from studiolo.service.evidence import EvidenceOps, VerificationItem
from studiolo.service.feed import EventAccess, FeedBatch, FeedOps
from studiolo.service.imports import Imported, ImportOps
from studiolo.service.reconfirm import Reconfirmed, ReconfirmOps
from studiolo.service.remote import RemoteOps
from studiolo.service.views import AuditReport, HandoffView, Orientation, TaskView, ViewOps
from studiolo.service.work import WorkOps

__all__ = [
    "ArtifactContent",
    "AuditReport",
    "CandidateDraft",
    "CompletionOutcome",
    "Coordinator",
    "DelegatedView",
    "DelegationRequest",
    "EventAccess",
    "FeedBatch",
    "HandoffView",
    "IdSource",
    "Imported",
    "Issued",
    "Orientation",
    "PublishedFile",
    "RandomIds",
    "Reconfirmed",
    "TaskListPage",
    "TaskPage",
    "TaskView",
    "VerificationItem",
    "hash_token",
    "make_request",
]


class Coordinator(
    RemoteOps,
    A2AOps,
    AdminOps,
    ReconfirmOps,
    WorkOps,
    ContentOps,
    ImportOps,
    EvidenceOps,
    CompletionOps,
    DashboardOps,
    FeedOps,
    ViewOps,
):
    """The one door: admin, reconfirmation after a restore, work, content, evidence,
    completion, views, the event feed, the dashboard's pages, A2A intake and delegation to
    remote agents (one mixin each)."""
