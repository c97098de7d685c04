"""The one door. Every face (HTTP, MCP, A2A, CLI, dashboard) calls `Coordinator`, which
composes one service per concept; every state change is one write transaction on the `Store`."""

from __future__ import annotations

import time
from collections.abc import Callable

from studiolo.core.reasons import Reason
from studiolo.service._auth import AuthCache
from studiolo.service._door import Context
from studiolo.service._ids import IdSource, RandomIds, hash_token
from studiolo.service._via import via
from studiolo.service.a2a import A2AOps, DelegatedView, DelegationRequest, PublishedFile
from studiolo.service.admin import AdminOps, Issued
from studiolo.service.completion import CompletionOps, CompletionOutcome, make_request
from studiolo.service.content import ArtifactContent, CandidateDraft, ContentOps
from studiolo.service.dashboard import DashboardOps, TaskListPage, TaskPage
from studiolo.service.evidence import EvidenceOps, ReceiptRead, VerificationItem
from studiolo.service.feed import EventAccess, FeedBatch, FeedOps
from studiolo.service.imports import Imported, ImportOps
from studiolo.service.reconfirm import Reconfirmed, ReconfirmOps
from studiolo.service.remote import RemoteOps
from studiolo.service.remote_wait import RemoteWaitOps
from studiolo.service.retention import RetentionOps, RetentionStatus, SweepReport
from studiolo.service.views import AuditReport, HandoffView, Orientation, TaskView, ViewOps
from studiolo.service.work import WorkOps
from studiolo.settings import Settings
from studiolo.store import Store

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
    "ReceiptRead",
    "Reconfirmed",
    "RetentionStatus",
    "SweepReport",
    "TaskListPage",
    "TaskPage",
    "TaskView",
    "VerificationItem",
    "hash_token",
    "make_request",
]


class Coordinator:
    """The one door: one service per concept, built around one shared `Context` and handed
    the services it uses (`service/_door.py` says what they share). Every public method of
    the door is one of a service's (`claim` is `self.work.claim`), so a face calls the door
    and a reader of a service's file sees everything it depends on."""

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        ids: IdSource | None = None,
        disabled_checks: frozenset[Reason] = frozenset(),
    ) -> None:
        self.ctx = ctx = Context(store, settings, clock=clock, ids=ids, disabled_checks=disabled_checks)
        self.admin = AdminOps(ctx)
        self.work = WorkOps(ctx)
        self.views = ViewOps(ctx)
        self.completion = CompletionOps(ctx)
        self.content = ContentOps(ctx)
        self.evidence = EvidenceOps(ctx)
        self.imports = ImportOps(ctx)
        self.reconfirming = ReconfirmOps(ctx)
        self.feed = FeedOps(ctx)
        self.dashboard = DashboardOps(ctx, self.views)
        self.a2a = A2AOps(ctx, self.work, self.views)
        self.remote_wait = RemoteWaitOps(ctx, self.work, self.completion)
        self.remote = RemoteOps(ctx, self.admin, self.work, self.remote_wait)
        self.retaining = RetentionOps(ctx)

    # what every service shares
    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    @property
    def clock(self) -> Callable[[], float]:
        return self.ctx.clock

    @property
    def ids(self) -> IdSource:
        return self.ctx.ids

    @property
    def disabled_checks(self) -> frozenset[Reason]:
        return self.ctx.disabled_checks

    @property
    def auth_cache(self) -> AuthCache:
        return self.ctx.auth_cache

    # the checks every face and the git projection may ask (`Context`)
    grants = staticmethod(Context.grants)
    can = via("ctx", Context.can)
    require = via("ctx", Context.require)
    path_reader = via("ctx", Context.path_reader)
    confine = via("ctx", Context.confine)
    sees_project = via("ctx", Context.sees_project)
    require_project = via("ctx", Context.require_project)
    visible_task = via("ctx", Context.visible_task)
    shown_task = via("ctx", Context.shown_task)
    may_read_task = via("ctx", Context.may_read_task)
    write_in = via("ctx", Context.write_in)
    write_about = via("ctx", Context.write_about)
    gate_of = via("ctx", Context.gate_of)
    audit = staticmethod(Context.audit)
    service_key = via("ctx", Context.service_key)
    # admin (`service/admin.py`)
    initialize = via("admin", AdminOps.initialize)
    authenticate = via("admin", AdminOps.authenticate)
    authenticate_cached = via("admin", AdminOps.authenticate_cached)
    warm_auth_cache = via("admin", AdminOps.warm_auth_cache)
    jwks = via("admin", AdminOps.jwks)
    rotate_service_key = via("admin", AdminOps.rotate_service_key)
    projects = via("admin", AdminOps.projects)
    create_project = via("admin", AdminOps.create_project)
    add_principal = via("admin", AdminOps.add_principal)
    principals = via("admin", AdminOps.principals)
    rotate_token = via("admin", AdminOps.rotate_token)
    revoke_tokens = via("admin", AdminOps.revoke_tokens)
    set_public_key = via("admin", AdminOps.set_public_key)
    grant = via("admin", AdminOps.grant)
    revoke_grant = via("admin", AdminOps.revoke_grant)
    list_grants = via("admin", AdminOps.list_grants)
    publish_policy = via("admin", AdminOps.publish_policy)
    policies = via("admin", AdminOps.policies)
    register_checker = via("admin", AdminOps.register_checker)
    checkers = via("admin", AdminOps.checkers)
    # work (`service/work.py`)
    create_task = via("work", WorkOps.create_task)
    cancel_task = via("work", WorkOps.cancel_task)
    migrate_task = via("work", WorkOps.migrate_task)
    claim = via("work", WorkOps.claim)
    reassign = via("work", WorkOps.reassign)
    heartbeat = via("work", WorkOps.heartbeat)
    heartbeats = via("work", WorkOps.heartbeats)
    release = via("work", WorkOps.release)
    handoff = via("work", WorkOps.handoff)
    attempt = via("work", WorkOps.attempt)
    # views (`service/views.py`)
    task_view = via("views", ViewOps.task_view)
    list_tasks = via("views", ViewOps.list_tasks)
    list_task_views = via("views", ViewOps.list_task_views)
    handoff_view = via("views", ViewOps.handoff_view)
    events = via("views", ViewOps.events)
    readable_events = via("views", ViewOps.readable_events)
    verify_audit = via("views", ViewOps.verify_audit)
    orient = via("views", ViewOps.orient)
    # completion (`service/completion.py`)
    complete = via("completion", CompletionOps.complete)
    # content (`service/content.py`)
    put_blob = via("content", ContentOps.put_blob)
    get_blob = via("content", ContentOps.get_blob)
    collect_garbage = via("content", ContentOps.collect_garbage)
    read_artifact = via("content", ContentOps.read_artifact)
    list_artifacts = via("content", ContentOps.list_artifacts)
    read_revision = via("content", ContentOps.read_revision)
    collection_revision = via("content", ContentOps.collection_revision)
    edit_artifact = via("content", ContentOps.edit_artifact)
    submit_candidate = via("content", ContentOps.submit_candidate)
    candidate = via("content", ContentOps.candidate)
    observe = via("content", ContentOps.observe)
    observations = via("content", ContentOps.observations)
    # evidence (`service/evidence.py`)
    submit_receipt = via("evidence", EvidenceOps.submit_receipt)
    reuse_receipt = via("evidence", EvidenceOps.reuse_receipt)
    receipts = via("evidence", EvidenceOps.receipts)
    receipt = via("evidence", EvidenceOps.receipt)
    receipt_reads = via("evidence", EvidenceOps.receipt_reads)
    receipt_read = via("evidence", EvidenceOps.receipt_read)
    verification_queue = via("evidence", EvidenceOps.verification_queue)
    candidate_tree = via("evidence", EvidenceOps.candidate_tree)
    # imports (`service/imports.py`)
    import_tree = via("imports", ImportOps.import_tree)
    edit_artifacts = via("imports", ImportOps.edit_artifacts)
    # reconfirm (`service/reconfirm.py`)
    reconfirm = via("reconfirming", ReconfirmOps.reconfirm)
    reconfirm_locally = via("reconfirming", ReconfirmOps.reconfirm_locally)
    held_authority = via("reconfirming", ReconfirmOps.held_authority)
    # feed (`service/feed.py`)
    event_access = via("feed", FeedOps.event_access)
    event_feed = via("feed", FeedOps.event_feed)
    # dashboard (`service/dashboard.py`)
    task_list_page = via("dashboard", DashboardOps.task_list_page)
    task_page = via("dashboard", DashboardOps.task_page)
    delegations_page = via("dashboard", DashboardOps.delegations_page)
    project_summaries = via("dashboard", DashboardOps.project_summaries)
    policy_pins = via("dashboard", DashboardOps.policy_pins)
    latest_events = via("dashboard", DashboardOps.latest_events)
    chain_status = via("dashboard", DashboardOps.chain_status)
    may_administer = via("dashboard", DashboardOps.may_administer)
    # a2a (`service/a2a.py`)
    define_intake = via("a2a", A2AOps.define_intake)
    intakes = via("a2a", A2AOps.intakes)
    signing_key = via("a2a", A2AOps.signing_key)
    delegable_intakes = via("a2a", A2AOps.delegable_intakes)
    delegate = via("a2a", A2AOps.delegate)
    delegated = via("a2a", A2AOps.delegated)
    delegations = via("a2a", A2AOps.delegations)
    cancel_delegated = via("a2a", A2AOps.cancel_delegated)
    # remote_wait (`service/remote_wait.py`)
    remote_sent = via("remote_wait", RemoteWaitOps.remote_sent)
    remote_terminal = via("remote_wait", RemoteWaitOps.remote_terminal)
    remote_send_failed = via("remote_wait", RemoteWaitOps.remote_send_failed)
    remote_integrity_failed = via("remote_wait", RemoteWaitOps.remote_integrity_failed)
    remote_indeterminate = via("remote_wait", RemoteWaitOps.remote_indeterminate)
    remote_keepalive = via("remote_wait", RemoteWaitOps.remote_keepalive)
    remote_finish = via("remote_wait", RemoteWaitOps.remote_finish)
    requester_lease = via("remote_wait", RemoteWaitOps.requester_lease)
    requester_release = via("remote_wait", RemoteWaitOps.requester_release)
    remote_review_queue = via("remote_wait", RemoteWaitOps.remote_review_queue)
    review_remote = via("remote_wait", RemoteWaitOps.review_remote)
    # retention (`service/retention.py`)
    retention = via("retaining", RetentionOps.retention)
    set_retention = via("retaining", RetentionOps.set_retention)
    place_hold = via("retaining", RetentionOps.place_hold)
    release_hold = via("retaining", RetentionOps.release_hold)
    delete_bytes = via("retaining", RetentionOps.delete_bytes)
    sweep_retention = via("retaining", RetentionOps.sweep_retention)
    # remote (`service/remote.py`)
    add_remote_org = via("remote", RemoteOps.add_remote_org)
    set_remote_origins = via("remote", RemoteOps.set_remote_origins)
    revoke_remote_org = via("remote", RemoteOps.revoke_remote_org)
    remote_orgs = via("remote", RemoteOps.remote_orgs)
    remote_org = via("remote", RemoteOps.remote_org)
    remote_org_for_task = via("remote", RemoteOps.remote_org_for_task)
    delegate_remote = via("remote", RemoteOps.delegate_remote)
    remote_delegation = via("remote", RemoteOps.remote_delegation)
    remote_delegations = via("remote", RemoteOps.remote_delegations)
    pending_remote = via("remote", RemoteOps.pending_remote)
    remote_state = via("remote", RemoteOps.remote_state)
    remote_brief = via("remote", RemoteOps.remote_brief)
