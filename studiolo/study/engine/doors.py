"""The thirteen mechanisms as doors of the real coordinator (report §6.2, SPEC §4).

Each mechanism is the real completion transaction with a set of predicates switched off
(``Coordinator(disabled_checks=...)``), plus one of two harness-side rules: reuse the
verdict cached at preflight (``split-preflight``) or also demand the newest default policy
(``latest-policy``).  Neither rule is in the core: the predicate knows nothing of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from studiolo.core.reasons import Reason

__all__ = ["DOORS", "EVERY_PREDICATE", "Door", "door"]

# `task_not_found` is not a switch: whoever may not see the task is never answered.
EVERY_PREDICATE: frozenset[Reason] = frozenset(Reason) - {Reason.TASK_NOT_FOUND}
_ATTEMPT = frozenset({Reason.CALLER_NOT_ATTEMPT_OWNER, Reason.ATTEMPT_SUPERSEDED})
_ATTEMPT_AND_LEASE = _ATTEMPT | {Reason.TASK_NOT_ACTIVE, Reason.LEASE_EXPIRED}
_EVIDENCE = frozenset(
    {Reason.EVIDENCE_UNTRUSTED, Reason.EVIDENCE_NOT_BOUND, Reason.EVIDENCE_MISSING, Reason.EVIDENCE_FAILED}
)
_NONE: frozenset[Reason] = frozenset()


@dataclass(frozen=True)
class Door:
    """One mechanism: the predicates it switches off and its harness-side rule, if any.

    ``reuse_preflight``: the completion evaluated at preflight decides; the commit only
    publishes (through the transaction with every predicate off).  ``latest_policy``: reject
    unless the task's pinned policy version is the newest default, then run the completion.
    """

    mechanism_id: str
    disabled: frozenset[Reason]
    reuse_preflight: bool = False
    latest_policy: bool = False

    @property
    def commit_disabled(self) -> frozenset[Reason]:
        """The predicates switched off in the transaction that runs at the commit event."""
        return EVERY_PREDICATE if self.reuse_preflight else self.disabled


DOORS: tuple[Door, ...] = (
    Door("full-atomic", _NONE),
    Door("split-preflight", _NONE, reuse_preflight=True),
    # Ownership and time window only (and an active task).
    Door("attempt-lease-only", EVERY_PREDICATE - _ATTEMPT_AND_LEASE),
    Door("no-attempt-binding", _ATTEMPT),
    # The engine has no fence-only predicate: `attempt_superseded` checks the attempt id, its
    # status and the fence together, and the fence of a named attempt never changes.
    Door("no-fence", _NONE),
    Door("no-lease", frozenset({Reason.LEASE_EXPIRED})),
    Door("no-input-revision", frozenset({Reason.DEPENDENCY_STALE})),
    Door("no-authorization", frozenset({Reason.NOT_AUTHORIZED})),
    # The request names the candidate (`candidate_not_bound`) and the target has not moved
    # since the candidate's base (`target_base_stale`): the model's artifact binding.
    Door("no-artifact-binding", frozenset({Reason.CANDIDATE_NOT_BOUND, Reason.TARGET_BASE_STALE})),
    Door("no-evidence", _EVIDENCE),
    Door("no-contract-binding", frozenset({Reason.CONTRACT_MISMATCH})),
    Door("latest-policy", _NONE, latest_policy=True),
    Door("report-only", EVERY_PREDICATE),
)


def door(mechanism_id: str) -> Door:
    """Look a door up by its mechanism id (``KeyError`` for an unknown id)."""
    for found in DOORS:
        if found.mechanism_id == mechanism_id:
            return found
    raise KeyError(mechanism_id)
