"""Engine mode on a sample of schedules: the real door against the oracle and the model.

The sample is every 50th schedule plus the report's §6.3 histories and one history per
ablation; each schedule is decided by every mechanism's door through the real completion
transaction.  The whole run is the slow test in ``test_engine_full.py``.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

import studiolo.study.engine
from studiolo.study.engine import DOORS, EXPLANATIONS, EngineDecision, explore
from studiolo.study.engine.run import partition
from studiolo.study.harness import execute
from studiolo.study.mechanisms import MECHANISMS
from studiolo.study.oracle import eligible
from studiolo.study.schedules import MAIN_CHAIN, Event, Schedule, all_schedules
from studiolo.study.setting import study_setup

E = Event
R, C, V, P, X = E.READ, E.CANDIDATE, E.TRUSTED_VERIFY, E.PREFLIGHT, E.COMMIT

# report §6.3, and the variants the report discusses
EDIT_AFTER_PREFLIGHT = (R, C, V, P, E.ARTIFACT_EDIT, X)
EDIT_BEFORE_PREFLIGHT = (R, C, E.ARTIFACT_EDIT, V, P, X)
INPUT_EDIT_BEFORE_VERIFY = (R, C, E.INPUT_EDIT, V, P, X)
POLICY_FIRST = (E.PUBLISH_POLICY, R, C, V, P, X)
# one history per obligation
EXPIRED = (R, C, V, P, E.EXPIRE, X)
REVOKED = (E.REVOKE, R, C, V, P, X)
REASSIGNED = (R, C, V, E.REASSIGN, P, X)
EXPIRED_THEN_REASSIGNED = (R, C, E.EXPIRE, E.REASSIGN, V, P, X)
REPLACED_BEFORE_CANDIDATE = (R, E.REASSIGN, C, V, P, X)
HARMLESS_EDITS = (E.INPUT_EDIT, R, E.ARTIFACT_EDIT, C, V, P, X)
AFTER_COMMIT = (*MAIN_CHAIN, E.REASSIGN, E.REVOKE, E.ARTIFACT_EDIT)

NAMED: tuple[Schedule, ...] = (
    EDIT_AFTER_PREFLIGHT,
    EDIT_BEFORE_PREFLIGHT,
    INPUT_EDIT_BEFORE_VERIFY,
    POLICY_FIRST,
    EXPIRED,
    REVOKED,
    REASSIGNED,
    EXPIRED_THEN_REASSIGNED,
    REPLACED_BEFORE_CANDIDATE,
    HARMLESS_EDITS,
    AFTER_COMMIT,
)
SAMPLE: tuple[Schedule, ...] = tuple(dict.fromkeys((*all_schedules()[::50], *NAMED)))
IDS = [d.mechanism_id for d in DOORS]

Decisions = Mapping[Schedule, Mapping[str, EngineDecision]]


@pytest.fixture(scope="module")
def decided() -> Decisions:
    found = explore(list(enumerate(SAMPLE))).decisions
    return {s: dict(zip(IDS, found[i], strict=True)) for i, s in enumerate(SAMPLE)}


def test_the_sample_covers_every_schedule_shape() -> None:
    schedules = all_schedules()
    assert set(SAMPLE) <= set(schedules)
    assert {len(s) for s in SAMPLE} == {5, 6, 7, 8}
    assert sum(eligible(s) for s in SAMPLE) >= 10


def test_full_atomic_matches_the_oracle_schedule_by_schedule(decided: Decisions) -> None:
    for schedule, by_door in decided.items():
        assert by_door["full-atomic"].accepted == eligible(schedule), schedule


def test_every_difference_from_the_model_is_an_explained_one(decided: Decisions) -> None:
    setup = study_setup()
    for schedule, by_door in decided.items():
        model = dict(zip(IDS, execute(schedule, MECHANISMS, setup), strict=True))
        for mechanism, decision in by_door.items():
            was = model[mechanism].accepted
            flips = any(x.differs(schedule, was) for x in EXPLANATIONS.get(mechanism, ()))
            assert decision.accepted == (was != flips), (mechanism, schedule, decision)


def test_ablations_only_add_accepts_and_latest_policy_only_removes(decided: Decisions) -> None:
    for schedule, by_door in decided.items():
        full = by_door["full-atomic"].accepted
        for mechanism, decision in by_door.items():
            if mechanism == "latest-policy":
                assert not decision.accepted or full, schedule
            else:
                assert decision.accepted or not full, (mechanism, schedule)


def test_every_accepted_decision_passes_both_replays(decided: Decisions) -> None:
    replays = [d.replay for by_door in decided.values() for d in by_door.values() if d.accepted]
    assert replays and all(r is not None for r in replays)
    assert all(r.identical_returned_receipt and r.changed_digest_rejected for r in replays if r)
    assert all(d.replay is None for by_door in decided.values() for d in by_door.values() if not d.accepted)


def _accepting(decided: Decisions, schedule: Schedule) -> set[str]:
    return {m for m, d in decided[schedule].items() if d.accepted}


EVERY = set(IDS)
NO_CHECKS = {"attempt-lease-only", "report-only"}  # neither looks at versions, grants or evidence


@pytest.mark.parametrize(
    ("schedule", "reason", "accepting"),
    [
        # §6.3: the cached preflight verdict admits the edit; the full contract rejects it.
        (EDIT_AFTER_PREFLIGHT, "target_base_stale", {"split-preflight", "no-artifact-binding", *NO_CHECKS}),
        # Moving the edit before preflight makes split-preflight reject too.  Receipts bind the
        # candidate's bytes, so the engine's evidence is not spoiled (the model's would be).
        (EDIT_BEFORE_PREFLIGHT, "target_base_stale", {"no-artifact-binding", *NO_CHECKS}),
        (INPUT_EDIT_BEFORE_VERIFY, "dependency_stale", {"no-input-revision", *NO_CHECKS}),
        (EXPIRED, "lease_expired", {"split-preflight", "no-lease", "report-only"}),
        (REVOKED, "not_authorized", {"no-authorization", *NO_CHECKS}),
        (REASSIGNED, "attempt_superseded", {"no-attempt-binding", "report-only"}),
        # The worker's own lease has run out: lease_expired rejects without the attempt checks.
        (EXPIRED_THEN_REASSIGNED, "attempt_superseded", {"report-only"}),
        # The door refused the replaced worker's candidate: nothing to accept.
        (REPLACED_BEFORE_CANDIDATE, "no candidate (attempt_not_active)", set()),
    ],
    ids=lambda value: "-".join(map(str, value)) if isinstance(value, tuple) else None,
)
def test_each_obligation_is_carried_by_its_predicate(
    decided: Decisions, schedule: Schedule, reason: str, accepting: set[str]
) -> None:
    assert decided[schedule]["full-atomic"].reason == reason
    assert _accepting(decided, schedule) == accepting


def test_publishing_a_policy_is_not_a_revocation(decided: Decisions) -> None:
    assert _accepting(decided, POLICY_FIRST) == EVERY - {"latest-policy"}
    assert decided[POLICY_FIRST]["latest-policy"].reason == "pinned policy is not the latest"


def test_edits_before_they_matter_are_harmless(decided: Decisions) -> None:
    assert _accepting(decided, HARMLESS_EDITS) == EVERY


def test_events_after_the_commit_do_not_undo_it(decided: Decisions) -> None:
    """Reassigning a completed task is refused, revoking does not reach back, and the
    identical replay still returns the original receipt (the read grant stays)."""
    assert _accepting(decided, AFTER_COMMIT) == EVERY
    for decision in decided[AFTER_COMMIT].values():
        assert decision.replay is not None
        assert decision.replay.identical_returned_receipt and decision.replay.changed_digest_rejected


def test_the_deciding_side_never_imports_the_oracle() -> None:
    """Only the tabulation (``compare``, ``run``) may read the oracle; the doors never do."""
    package = Path(studiolo.study.engine.__file__).parent
    for name in ("branch", "project", "doors", "session", "decide", "explore", "controls"):
        tree = ast.parse((package / f"{name}.py").read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not any(m.endswith("oracle") for m in imported), name


def test_how_the_schedules_are_split_changes_nothing() -> None:
    """Chunks cut at prefixes of at most four events: the same decisions and the same
    transaction counts however many chunks (each in its own ledger) explore them."""
    sample = [s for s in all_schedules() if len(s) == 6][:24] + [s for s in all_schedules() if len(s) == 7][
        :12
    ]
    whole = explore(list(enumerate(sample)))
    decisions: dict[int, tuple[EngineDecision, ...]] = {}
    transactions: Counter[str] = Counter()
    for chunk in partition(sample, 3):
        part = explore([(i, sample[i]) for i in chunk])
        decisions.update(part.decisions)
        transactions.update(part.transactions)
    assert decisions == whole.decisions
    assert transactions == whole.transactions
