"""Domain values → response models. Explicit, so nothing internal leaks by accident."""

from __future__ import annotations

from studiolo.core.model import (
    Artifact,
    Attempt,
    Candidate,
    Checker,
    Completion,
    Contract,
    Event,
    Grant,
    Handoff,
    Observation,
    Policy,
    Principal,
    Project,
    Receipt,
    Task,
)
from studiolo.faces.http import schemas as s
from studiolo.service import HandoffView, Issued, Orientation, TaskView, VerificationItem
from studiolo.service.evidence import CandidateTree

__all__ = [
    "artifact",
    "attempt",
    "candidate",
    "candidate_tree",
    "checker",
    "completion",
    "event",
    "grant",
    "handoff",
    "handoff_view",
    "issued",
    "observation",
    "orientation",
    "policy",
    "principal",
    "project",
    "receipt",
    "task",
    "task_summary",
    "task_view",
    "verification",
]


def project(p: Project) -> s.ProjectOut:
    return s.ProjectOut(id=p.id, name=p.name, created_at=p.created_at)


def principal(p: Principal) -> s.PrincipalOut:
    return s.PrincipalOut(
        id=p.id, project_id=p.project_id, name=p.name, kind=p.kind.value, public_key=p.public_key
    )


def issued(i: Issued) -> s.IssuedOut:
    return s.IssuedOut(principal=principal(i.principal), token=i.token)


def grant(g: Grant) -> s.GrantOut:
    return s.GrantOut(
        id=g.id,
        project_id=g.project_id,
        principal_id=g.principal_id,
        actions=sorted(a.value for a in g.actions),
        scope=list(g.scope),
        created_at=g.created_at,
        revoked_at=g.revoked_at,
        live=g.live,
    )


def policy(p: Policy) -> s.PolicyOut:
    return s.PolicyOut(
        project_id=p.project_id, version=p.version, text=p.text, digest=p.digest, created_at=p.created_at
    )


def checker(c: Checker) -> s.CheckerOut:
    return s.CheckerOut(
        project_id=c.project_id,
        name=c.name,
        version=c.version,
        ref=c.ref,
        kind=c.kind,
        config=dict(c.config),
        verifiers=sorted(c.verifiers),
    )


def contract(c: Contract) -> s.ContractOut:
    return s.ContractOut.model_validate(c.to_json())


def task(t: Task) -> s.TaskOut:
    return s.TaskOut(
        id=t.id,
        project_id=t.project_id,
        title=t.title,
        description=t.description,
        contract=contract(t.contract),
        contract_hash=t.contract_hash,
        status=t.status.value,
        current_attempt_id=t.current_attempt_id,
        fence=t.fence,
        created_at=t.created_at,
        completed_at=t.completed_at,
    )


def task_summary(v: TaskView) -> s.TaskSummaryOut:
    return s.TaskSummaryOut(**task(v.task).model_dump(), fact=v.fact.value, still_current=v.still_current)


def task_view(v: TaskView) -> s.TaskViewOut:
    return s.TaskViewOut(
        task=task_summary(v),
        attempts=[attempt(a) for a in v.attempts],
        candidates=[candidate(c) for c in v.candidates],
        receipts=[receipt(r) for r in v.receipts],
        completion=completion(v.completion) if v.completion else None,
        rejections=[event(e) for e in v.rejections],
    )


def attempt(a: Attempt) -> s.AttemptOut:
    return s.AttemptOut(
        id=a.id,
        task_id=a.task_id,
        principal_id=a.principal_id,
        fence=a.fence,
        lease_deadline=a.lease_deadline,
        status=a.status.value,
        created_at=a.created_at,
    )


def candidate(c: Candidate) -> s.CandidateOut:
    return s.CandidateOut(
        id=c.id,
        task_id=c.task_id,
        attempt_id=c.attempt_id,
        files=dict(c.files),
        bases=dict(c.bases),
        file_deps=dict(c.file_deps),
        collection_deps=dict(c.collection_deps),
        digest=c.digest,
        dependency_digest=c.dependency_digest,
        write_set=sorted(c.write_set),
        created_at=c.created_at,
    )


def receipt(r: Receipt) -> s.ReceiptOut:
    return s.ReceiptOut(
        id=r.id, candidate_id=r.candidate_id, body=r.signed_body(), signature=r.signature, reused=r.reused
    )


def completion(c: Completion) -> s.CompletionOut:
    return s.CompletionOut(
        id=c.id,
        task_id=c.task_id,
        attempt_id=c.attempt_id,
        candidate_id=c.candidate_id,
        request_id=c.request_id,
        principal_id=c.principal_id,
        commit_version=c.commit_version,
        receipt=dict(c.receipt),
        signature=c.signature,
        revisions=dict(c.revisions),
        created_at=c.created_at,
    )


def event(e: Event) -> s.EventOut:
    return s.EventOut(
        seq=e.seq,
        project_id=e.project_id,
        kind=e.kind,
        actor=e.actor,
        subject=e.subject,
        data=dict(e.data),
        at=e.at,
        prev_hash=e.prev_hash,
        hash=e.hash,
    )


def artifact(a: Artifact) -> s.ArtifactOut:
    return s.ArtifactOut(
        project_id=a.project_id,
        path=a.path,
        revision=a.revision,
        digest=a.digest,
        deleted=a.digest is None,
        updated_at=a.updated_at,
    )


def observation(o: Observation) -> s.ObservationOut:
    return s.ObservationOut(
        id=o.id,
        project_id=o.project_id,
        target=o.target,
        revision=o.revision,
        digest=o.digest,
        kind=o.kind,
        observed_at=o.observed_at,
        observer_id=o.observer_id,
    )


def handoff(h: Handoff) -> s.HandoffOut:
    return s.HandoffOut(
        id=h.id,
        task_id=h.task_id,
        attempt_id=h.attempt_id,
        principal_id=h.principal_id,
        contract_hash=h.contract_hash,
        artifacts=dict(h.artifacts),
        obligations=list(h.obligations),
        notes=h.notes,
        created_at=h.created_at,
    )


def handoff_view(v: HandoffView) -> s.HandoffViewOut:
    refs = {p: s.HandoffRefOut.model_validate(dict(ref)) for p, ref in v.artifacts.items()}
    return s.HandoffViewOut(handoff=handoff(v.handoff), contract_current=v.contract_current, artifacts=refs)


def verification(v: VerificationItem) -> s.VerificationOut:
    return s.VerificationOut.model_validate(v.to_json())


def candidate_tree(t: CandidateTree) -> s.CandidateTreeOut:
    return s.CandidateTreeOut.model_validate(t.to_json())


def orientation(o: Orientation) -> s.OrientationOut:
    return s.OrientationOut(
        principal=principal(o.principal),
        project_id=o.project_id,
        policy=policy(o.policy) if o.policy else None,
        grants=[grant(g) for g in o.grants],
        open_tasks=[task(t) for t in o.open_tasks],
        my_attempts=[attempt(a) for a in o.my_attempts],
    )
