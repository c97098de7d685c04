from __future__ import annotations

import ast
from pathlib import Path

import studiolo.study
from studiolo.study.oracle import eligible, facts_at_commit
from studiolo.study.schedules import MAIN_CHAIN, Event, Schedule, all_schedules

STUDY = Path(studiolo.study.__file__).parent
MECHANISM_SIDE = {"mechanisms", "world", "ledger", "harness", "controls", "setting"}


def _harmless_before_commit(schedule: Schedule) -> bool:
    """The rule stated independently: every environment event before commit is harmless."""
    commit = schedule.index(Event.COMMIT)
    for position, event in enumerate(schedule[:commit]):
        if event in MAIN_CHAIN or event is Event.PUBLISH_POLICY:
            continue
        if event is Event.INPUT_EDIT and position < schedule.index(Event.READ):
            continue
        if event is Event.ARTIFACT_EDIT and position < schedule.index(Event.CANDIDATE):
            continue
        return False
    return True


def test_oracle_labels_470_eligible_and_6224_ineligible() -> None:
    labels = [eligible(s) for s in all_schedules()]
    assert labels.count(True) == 470
    assert labels.count(False) == 6224


def test_oracle_agrees_with_the_harmless_events_rule_on_every_schedule() -> None:
    for schedule in all_schedules():
        assert eligible(schedule) == _harmless_before_commit(schedule), schedule


def test_events_after_commit_never_matter() -> None:
    base = (*MAIN_CHAIN,)
    for event in (Event.EXPIRE, Event.REASSIGN, Event.REVOKE, Event.ARTIFACT_EDIT):
        assert eligible((*base, event))


def test_reassign_removes_ownership_and_lease() -> None:
    facts = facts_at_commit((Event.READ, Event.REASSIGN, *MAIN_CHAIN[1:]))
    assert not facts.worker_owns_task
    assert not facts.worker_lease_running


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _study_modules(names: set[str]) -> set[str]:
    prefix = "studiolo.study."
    return {n[len(prefix) :].split(".")[0] for n in names if n.startswith(prefix)}


def test_oracle_imports_nothing_from_the_mechanism_side() -> None:
    imported = _study_modules(_imported_modules(STUDY / "oracle.py"))
    assert imported <= {"schedules"}, imported
    assert not imported & MECHANISM_SIDE


def test_mechanism_side_never_imports_the_oracle() -> None:
    for module in MECHANISM_SIDE:
        imported = _study_modules(_imported_modules(STUDY / f"{module}.py"))
        assert "oracle" not in imported, module


def test_the_study_package_is_self_contained() -> None:
    """Only stdlib, rfc8785 and studiolo.study: the source digest then covers the model."""
    for path in sorted(STUDY.glob("*.py")):
        for name in _imported_modules(path):
            top = name.split(".")[0]
            if top == "studiolo":
                assert name.startswith("studiolo.study"), (path.name, name)
            else:
                assert top == "rfc8785" or top in _stdlib(), (path.name, name)


def _stdlib() -> frozenset[str]:
    import sys

    return frozenset(sys.stdlib_module_names) | {"__future__"}
