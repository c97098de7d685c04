"""The engine's ledger: savepoint transactions, branches that undo, and the study's world."""

from __future__ import annotations

import pytest

from studiolo import Conflict
from studiolo.core.model import TaskStatus
from studiolo.study.engine.branch import BranchStore
from studiolo.study.engine.explore import ledger
from studiolo.study.engine.project import INPUT, LEASE_SECONDS, TARGET, EngineProject
from studiolo.study.engine.session import Session


def _revision(project: EngineProject, store: BranchStore, path: str) -> int:
    return Session(project, store).coordinator().read_revision(project.admin, project.project_id, path)


def test_the_world_starts_as_the_model_does() -> None:
    with ledger() as (project, store):
        door = Session(project, store).coordinator()
        content = door.read_artifact(project.worker, project.project_id, INPUT)
        assert (content.artifact.revision, content.data) == (1, b"21")
        assert _revision(project, store, TARGET) == 0  # absent: a candidate declares base 0
        task = door.task_view(project.worker, project.task.id).task
        assert task.status is TaskStatus.CLAIMED and task.current_attempt_id == project.attempt.id
        assert project.attempt.lease_deadline == project.clock() + LEASE_SECONDS
        assert task.contract.policy_version == 1


def test_a_branch_undoes_the_ledger_and_the_clock() -> None:
    with ledger() as (project, store):
        door = Session(project, store).coordinator()
        before, now = door.events(project.admin, project.project_id)[-1].seq, project.clock()
        with store.branch():
            door.edit_artifact(project.human, project.project_id, TARGET, project.edited_digest, 0)
            project.clock.advance(LEASE_SECONDS + 1)
            door.reassign(project.admin, project.task.id, project.replacement.id, LEASE_SECONDS)
            assert _revision(project, store, TARGET) == 1
        assert _revision(project, store, TARGET) == 0
        assert project.clock() == now
        assert door.events(project.admin, project.project_id)[-1].seq == before
        assert door.task_view(project.admin, project.task.id).task.current_attempt_id == project.attempt.id


def test_a_failing_door_transaction_is_rolled_back_alone() -> None:
    """Each door call is a savepoint: an error undoes that call, not the branch around it."""
    with ledger() as (project, store):
        door = Session(project, store).coordinator()
        with store.branch():
            door.edit_artifact(project.human, project.project_id, TARGET, project.edited_digest, 0)
            with pytest.raises(Conflict) as refused:
                door.edit_artifact(project.human, project.project_id, TARGET, project.edited_digest, 0)
            assert refused.value.reason == "revision_conflict"
            assert _revision(project, store, TARGET) == 1


def test_revoking_keeps_the_worker_able_to_read() -> None:
    with ledger() as (project, store):
        door = Session(project, store).coordinator()
        door.revoke_grant(project.admin, project.worker_write_grant)
        assert door.read_artifact(project.worker, project.project_id, INPUT).data == b"21"
