"""Verification work: the read-side helpers that build, inside one transaction, what a
verifier is asked to check and the exact tree it checks.

The value types live in the wire package (`studiolo.api.verification`), so that the
verifier's HTTP side needs no server; they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping

from studiolo.api.verification import CandidateTree, TreeEntry, VerificationItem
from studiolo.core.model import Candidate, Checker, Principal, Task
from studiolo.service._door import Context
from studiolo.store import Tx

__all__ = [
    "CandidateTree",
    "TreeEntry",
    "VerificationItem",
    "declared_tree",
    "request_verification",
    "work_items",
]


def request_verification(tx: Tx, task: Task, cand: Candidate, actor: Principal) -> None:
    """Announce, in the event stream, one verification request per criterion of a new candidate."""
    for crit in task.contract.criteria:
        Context.audit(
            tx,
            task.project_id,
            "verification.requested",
            actor,
            cand.id,
            task=task.id,
            attempt=cand.attempt_id,
            criterion=crit.id,
            checker=crit.checker,
            candidate_digest=cand.digest,
            dependency_digest=cand.dependency_digest,
        )


def work_items(tx: Tx, caller: Principal, task: Task, mine: Mapping[str, Checker]) -> list[VerificationItem]:
    """The unchecked criteria of the task's current attempt's candidates that `mine` covers."""
    if task.current_attempt_id is None:
        return []
    out = []
    # Every candidate of the current attempt (the worker may cite any of them), newest first.
    cands = list(reversed(tx.content.candidates_of_attempt(task.current_attempt_id)))
    named = {d for c in cands for d in c.files.values() if d}
    deleted = set(tx.retention.tombstones(task.project_id, named)) if named else set()
    for cand in cands:
        if deleted & set(cand.files.values()):
            continue  # its bytes were deleted: nobody can check them again
        done = {(r.criterion, r.checker) for r in tx.evidence.receipts_of_candidate(cand.id)}
        for crit in task.contract.criteria:
            checker = mine.get(crit.checker)
            if checker is None or (crit.id, crit.checker) in done:
                continue
            out.append(
                VerificationItem(
                    project_id=task.project_id,
                    task_id=task.id,
                    attempt_id=cand.attempt_id,
                    candidate_id=cand.id,
                    contract_hash=task.contract_hash,
                    criterion=crit.id,
                    checker=crit.checker,
                    checker_kind=checker.kind,
                    checker_config=dict(checker.config),
                    candidate_digest=cand.digest,
                    dependency_digest=cand.dependency_digest,
                    files=dict(cand.files),
                    bases=dict(cand.bases),
                    file_deps=dict(cand.file_deps),
                    collection_deps=dict(cand.collection_deps),
                    issuer=caller.id,
                    modes=dict(cand.modes),
                )
            )
    return out


def declared_tree(tx: Tx, project_id: str, cand: Candidate) -> tuple[dict[str, TreeEntry], tuple[str, ...]]:
    """Path → entry of the tree to check, and the declared dependencies it cannot reproduce."""
    files = {
        a.path: TreeEntry(path=a.path, digest=a.digest, revision=a.revision, source="current", mode=a.mode)
        for a in tx.content.artifacts(project_id)
        if a.digest is not None
    }
    unreproducible: list[str] = []
    for path, rev in sorted(cand.file_deps.items()):
        files.pop(path, None)
        if rev == 0:
            continue  # declared as absent
        old = [h for h in tx.content.history(project_id, path) if h["revision"] == rev]
        if not old:
            unreproducible.append(path)
        elif old[0]["digest"] is not None:
            was = old[0]
            files[path] = TreeEntry(
                path=path, digest=was["digest"], revision=rev, source="declared", mode=was["mode"]
            )
    now = tx.content.collection_revisions(project_id, cand.collection_deps)
    unreproducible.extend(p for p, rev in sorted(cand.collection_deps.items()) if now[p] != rev)
    for path, digest in cand.files.items():
        files.pop(path, None)
        if digest is not None:
            files[path] = TreeEntry(
                path=path, digest=digest, revision=None, source="candidate", mode=cand.mode_of(path)
            )
    return files, tuple(unreproducible)
