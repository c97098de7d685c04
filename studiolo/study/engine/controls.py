"""The seven negative controls through the real door, once per mechanism (report §6.4).

Each control is the quiescent main chain with one deliberate defect, as in the model
(``studiolo/study/controls.py``), made of real objects:

- untrusted-receipt: the worker cites a receipt id it made up (well formed, not in the
  evidence store);
- wrong-candidate: a genuine passing receipt for another candidate of the same attempt
  (the draft ``42\\n``);
- wrong-digest: the verifier signs a receipt naming this candidate but recording the digest
  of other bytes.  The door refuses to record it (``evidence_not_bound`` at submission), so
  the worker cites an id the evidence store never admitted;
- wrong-task / wrong-contract: the worker claims another task's contract hash, or the hash
  of an integer-only draft of this task's contract, with genuine receipts;
- checker-rejects: the answer ``2n + 1``, which the admitted checker fails;
- inadequate-checker: the task pinned to the integer-only checker, answer 999.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from studiolo._exceptions import InvalidRequest
from studiolo.core.canonical import digest_bytes, digest_json
from studiolo.core.model import Candidate, Contract, Criterion
from studiolo.service.evidence import parse_receipt_body
from studiolo.study.controls import EXPECTED, Control, ControlResult
from studiolo.study.engine.doors import DOORS
from studiolo.study.engine.explore import explore, ledger
from studiolo.study.engine.project import INPUT, TARGET, EngineProject
from studiolo.study.engine.session import Plan, Session
from studiolo.study.schedules import MAIN_CHAIN

__all__ = ["PLANS", "run_controls"]

DRAFT = b"42\n"


def _forged(session: Session, candidate: Candidate) -> tuple[str, ...]:
    del session, candidate
    return ("rcp_made-up-by-the-worker",)


def _other_candidate(session: Session, candidate: Candidate) -> tuple[str, ...]:
    draft = session.stage(DRAFT, candidate.file_deps[INPUT])
    return session.verify(draft)


def _other_bytes(session: Session, candidate: Candidate) -> tuple[str, ...]:
    other = digest_json({"files": {TARGET: digest_bytes(DRAFT)}})
    criterion = session.task.contract.criteria[0]
    body = session.receipt_body(candidate, criterion, True, digest=other)
    signature = session.sign(body)
    p = session.project
    try:
        session.coordinator().submit_receipt(p.verifier, candidate.id, body, signature)
    except InvalidRequest as refused:
        if refused.reason != "evidence_not_bound":
            raise
    return (parse_receipt_body(body, signature, p.project_id, candidate.id).id,)


def _integer_draft(project: EngineProject) -> str:
    pinned = project.task.contract
    draft = Contract(pinned.task_id, (Criterion("answer", "integer@1"),), pinned.scope, pinned.policy_version)
    return draft.hash


PLANS: Mapping[Control, tuple[str, Plan]] = MappingProxyType(
    {
        Control.UNTRUSTED_RECEIPT: ("a receipt id the worker made up", Plan(evidence=_forged)),
        Control.WRONG_CANDIDATE: (
            "a genuine passing receipt for another candidate of the attempt",
            Plan(evidence=_other_candidate),
        ),
        Control.WRONG_DIGEST: (
            "a receipt recording another digest (refused by the door, cited anyway)",
            Plan(evidence=_other_bytes),
        ),
        Control.WRONG_TASK: (
            "genuine receipts, claiming another task's contract",
            Plan(claimed_contract=lambda p: p.other_task.contract_hash),
        ),
        Control.WRONG_CONTRACT: (
            "genuine receipts, claiming a contract the task is not pinned to",
            Plan(claimed_contract=_integer_draft),
        ),
        Control.CHECKER_REJECTS: (
            "the answer 2n + 1, failed by the admitted checker",
            Plan(answer=lambda value: str(2 * value + 1).encode()),
        ),
        Control.INADEQUATE_CHECKER: (
            "the answer 999 under a pinned contract whose checker tests only integers",
            Plan(answer=lambda value: b"999", integer_task=True),
        ),
    }
)


def run_controls() -> tuple[ControlResult, ...]:
    """Every control under every door (7 x 13 = 91 executions), in one fresh ledger."""
    results = []
    with ledger() as opened:
        for control in Control:
            description, plan = PLANS[control]
            decisions = explore([(0, MAIN_CHAIN)], plan, opened).decisions[0]
            accepted = tuple((d.mechanism_id, x.accepted) for d, x in zip(DOORS, decisions, strict=True))
            expected = tuple((m, wants[control]) for m, wants in EXPECTED.items() if control in wants)
            results.append(ControlResult(control, description, accepted, expected))
    return tuple(results)
