"""The outcome oracle: is a completion decision eligible?  (report §6.1)

The oracle is deliberately independent of the mechanisms under test: it shares
no code with ``mechanisms``, ``world`` or ``harness`` (a test parses the imports
to keep it that way).  It does not simulate bytes, digests, requests or
receipts.  It replays the event history once, keeping its own small record of
the facts the completion contract is about, and asks whether all of them hold
at the commit point.  Events after the commit never matter: a later change does
not make a historical decision wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from studiolo.study.schedules import Event, Schedule

__all__ = ["Facts", "eligible", "facts_at_commit"]


@dataclass(frozen=True)
class Facts:
    """What is true at the commit point, reconstructed from the history alone.

    Versions are plain counters: ``input_version`` counts input changes,
    ``output_version`` counts writes to the working artifact.
    """

    worker_owns_task: bool = True
    worker_lease_running: bool = True
    worker_authorized: bool = True
    input_version: int = 0
    input_version_read: int | None = None
    output_version: int = 0
    candidate_version: int | None = None
    verified_version: int | None = None

    def eligible(self) -> bool:
        """All of the completion contract's facts hold for the worker's candidate."""
        return (
            self.worker_owns_task
            and self.worker_lease_running
            and self.worker_authorized
            and self.input_version_read == self.input_version
            and self.candidate_version is not None
            and self.output_version == self.candidate_version
            and self.verified_version == self.candidate_version
        )


def _observe(facts: Facts, event: Event) -> Facts:
    """Fold one event into the facts (the oracle's own reading of each event)."""
    match event:
        case Event.READ:
            return replace(facts, input_version_read=facts.input_version)
        case Event.CANDIDATE:
            written = facts.output_version + 1
            return replace(facts, output_version=written, candidate_version=written)
        case Event.TRUSTED_VERIFY:
            # The verifier observes what is in the working artifact now.
            return replace(facts, verified_version=facts.output_version)
        case Event.INPUT_EDIT:
            return replace(facts, input_version=facts.input_version + 1)
        case Event.ARTIFACT_EDIT:
            return replace(facts, output_version=facts.output_version + 1)
        case Event.EXPIRE:
            return replace(facts, worker_lease_running=False)
        case Event.REASSIGN:
            # The replacement owner takes over the task; the worker holds nothing.
            return replace(facts, worker_owns_task=False, worker_lease_running=False)
        case Event.REVOKE:
            return replace(facts, worker_authorized=False)
        case _:
            # preflight observes without changing anything; publishing a new
            # default policy leaves the task pinned to its contract, so neither
            # changes a fact.
            return facts


def facts_at_commit(history: Schedule) -> Facts:
    """The facts just before the commit event (events after it are ignored)."""
    facts = Facts()
    for event in history:
        if event is Event.COMMIT:
            return facts
        facts = _observe(facts, event)
    raise ValueError("a decision history must contain a commit event")


def eligible(history: Schedule) -> bool:
    """Is the commit decision of ``history`` eligible (should it be accepted)?"""
    return facts_at_commit(history).eligible()
