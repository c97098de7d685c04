"""Seven directed negative controls, run once per mechanism (report §6.4).

Each control is the quiescent main chain (no environment event) with one
deliberately invalid — or, for the seventh, protocol-valid but semantically
wrong — submission.  These are constructed contract tests, not measured rates
of agent fabrication.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from studiolo.study.harness import WorkerPlan, execute, verify_working_copy
from studiolo.study.mechanisms import MECHANISMS
from studiolo.study.schedules import MAIN_CHAIN
from studiolo.study.setting import DOUBLING, INTEGER_ONLY, OTHER_TASK, study_setup
from studiolo.study.world import Candidate, Contract, World

__all__ = ["EXPECTED", "Control", "ControlResult", "run_controls"]


class Control(StrEnum):
    UNTRUSTED_RECEIPT = "untrusted-receipt"
    WRONG_CANDIDATE = "wrong-candidate"
    WRONG_DIGEST = "wrong-digest"
    WRONG_TASK = "wrong-task"
    WRONG_CONTRACT = "wrong-contract"
    CHECKER_REJECTS = "checker-rejects"
    INADEQUATE_CHECKER = "inadequate-checker"


def _forged(world: World, candidate: Candidate, contract_hash: str) -> tuple[str, ...]:
    """The worker cites a receipt id it made up; the protected store has no such record."""
    del world, candidate, contract_hash
    return ("worker-receipt-1",)


def _other_candidate(world: World, candidate: Candidate, contract_hash: str) -> tuple[str, ...]:
    """A genuine passing receipt, but for another candidate (a draft of the same answer)."""
    draft = world.stage_candidate(candidate.attempt_id, b"42\n", candidate.input_revision)
    return world.verify(draft.candidate_id, contract_hash, draft.data)


def _other_bytes(world: World, candidate: Candidate, contract_hash: str) -> tuple[str, ...]:
    """A genuine receipt naming this candidate, recording the digest of other bytes."""
    return world.verify(candidate.candidate_id, contract_hash, b"42\n")


@dataclass(frozen=True)
class _Spec:
    description: str
    plan: WorkerPlan
    pinned: Contract = DOUBLING


_SPECS: Mapping[Control, _Spec] = MappingProxyType(
    {
        Control.UNTRUSTED_RECEIPT: _Spec("an untrusted receipt id", WorkerPlan(evidence=_forged)),
        Control.WRONG_CANDIDATE: _Spec(
            "evidence for the wrong candidate", WorkerPlan(evidence=_other_candidate)
        ),
        Control.WRONG_DIGEST: _Spec("evidence with the wrong digest", WorkerPlan(evidence=_other_bytes)),
        Control.WRONG_TASK: _Spec(
            "a consistent submission under another task's contract",
            WorkerPlan(claimed_contract_hash=OTHER_TASK.contract_hash()),
        ),
        Control.WRONG_CONTRACT: _Spec(
            "a consistent submission under a contract the task is not pinned to",
            WorkerPlan(claimed_contract_hash=INTEGER_ONLY.contract_hash()),
        ),
        Control.CHECKER_REJECTS: _Spec(
            "a wrong answer the admitted checker rejects",
            WorkerPlan(answer=lambda value: str(2 * value + 1).encode()),
        ),
        Control.INADEQUATE_CHECKER: _Spec(
            "the wrong answer 999 under a pinned contract whose checker tests only integers",
            WorkerPlan(answer=lambda value: b"999", evidence=verify_working_copy),
            pinned=INTEGER_ONLY,
        ),
    }
)

_INVALID = tuple(c for c in Control if c is not Control.INADEQUATE_CHECKER)
_EVIDENCE_OBLIGATIONS = (
    Control.UNTRUSTED_RECEIPT,
    Control.WRONG_CANDIDATE,
    Control.WRONG_DIGEST,
    Control.CHECKER_REJECTS,
)
_CONTRACT_OBLIGATIONS = (Control.WRONG_TASK, Control.WRONG_CONTRACT)

EXPECTED: Mapping[str, Mapping[Control, bool]] = MappingProxyType(
    {
        # report §6.4: "The full mechanism rejects all six" and accepts the seventh.
        "full-atomic": MappingProxyType({c: c is Control.INADEQUATE_CHECKER for c in Control}),
        # "Omitting evidence admits the forged, wrong-candidate, wrong-digest, and
        # checker-rejection cases; omitting contract binding admits the wrong-task
        # and wrong-contract cases."
        "no-evidence": MappingProxyType({c: c in _EVIDENCE_OBLIGATIONS for c in _INVALID}),
        "no-contract-binding": MappingProxyType({c: c in _CONTRACT_OBLIGATIONS for c in _INVALID}),
    }
)


@dataclass(frozen=True)
class ControlResult:
    """One control across every mechanism: accepted or not, and what the report expects."""

    control: Control
    description: str
    accepted: tuple[tuple[str, bool], ...]
    expected: tuple[tuple[str, bool], ...]

    @property
    def matches(self) -> bool:
        outcomes = dict(self.accepted)
        return all(outcomes[mechanism] == want for mechanism, want in self.expected)


def run_controls() -> tuple[ControlResult, ...]:
    """Run every control under every mechanism (7 x 13 = 91 executions)."""
    return tuple(_run(control, _SPECS[control]) for control in Control)


def _run(control: Control, spec: _Spec) -> ControlResult:
    decisions = execute(MAIN_CHAIN, MECHANISMS, study_setup(spec.pinned), spec.plan)
    accepted = tuple((m.mechanism_id, d.accepted) for m, d in zip(MECHANISMS, decisions, strict=True))
    expected = tuple((mechanism, wants[control]) for mechanism, wants in EXPECTED.items() if control in wants)
    return ControlResult(control, spec.description, accepted, expected)
