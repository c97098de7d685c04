"""The authority's script: the same turns for every mechanism under one seed.

A reassignment (the lowest task an agent holds goes to the other agent), a revocation of one
agent's work grant and a re-grant ten turns later, a policy publication, a contract
migration of the lowest open task to the new policy, a verifier outage of six turns, and
human direct edits: each a later commit's change to a path a task also changes, re-applied
on the file as the ledger holds it then (skipped when git's merge conflicts).
"""

from __future__ import annotations

import hashlib
import random
from typing import TYPE_CHECKING

from studiolo._exceptions import StudioloError
from studiolo.eval.workload import apply_change
from studiolo.eval.world import AGENTS

if TYPE_CHECKING:
    from studiolo.eval.cell import Cell

__all__ = ["Authority"]

POLICY_V2 = "Behaviour v2: new defaults for tasks created from now on."
_RESTORING = ("regrant", "verifier-back")


class Authority:
    def __init__(self, cell: Cell, seed: int, *, enabled: bool) -> None:
        self.cell = cell
        self.grants = dict(cell.world.work_grants)  # this cell's: a re-grant makes a new one
        self.plan: list[tuple[int, str, str]] = _plan(seed, len(cell.workload.human_edits)) if enabled else []

    @property
    def pending(self) -> bool:
        return any(kind in _RESTORING for _turn, kind, _arg in self.plan)

    def act(self, turn: int) -> None:
        due = [step for step in self.plan if step[0] == turn]
        self.plan = [step for step in self.plan if step[0] != turn]
        for _turn, kind, arg in due:
            try:
                getattr(self, "_" + kind.replace("-", "_"))(arg)
            except StudioloError as refused:
                self.cell.trace.emit("authority-refused", action=kind, reason=refused.reason)

    # the actions ----------------------------------------------------------------
    def _reassign(self, _arg: str) -> None:
        cell = self.cell
        held = sorted(
            (a.work.task.index, name)
            for name, a in cell.agents.items()
            if a.work is not None and a.work.attempt
        )
        if not held:
            cell.trace.emit("authority-skipped", action="reassign", why="no agent holds a task")
            return
        index, holder = held[0]
        other = next(n for n in AGENTS if n != holder)
        attempt = cell.door.reassign(
            cell.world.admin, cell.world.tasks[index].id, cell.world.agents[other].id, cell.lease
        )
        cell.record_attempt(other, index, attempt, "reassign")
        cell.agents[other].inbox.append((index, attempt))

    def _revoke(self, agent: str) -> None:
        cell = self.cell
        cell.door.revoke_grant(cell.world.admin, self.grants[agent])
        cell.trace.emit(
            "revoke",
            principal=cell.trace.name(cell.world.agents[agent].id),
            grant=cell.trace.name(self.grants[agent]),
        )

    def _regrant(self, agent: str) -> None:
        cell, w = self.cell, self.cell.world
        grant = cell.door.grant(
            w.admin, w.project_id, w.agents[agent].id, ["write", "claim", "complete"], ["**"]
        )
        self.grants[agent] = grant.id
        cell.trace.emit(
            "grant", principal=cell.trace.name(w.agents[agent].id), grant=cell.trace.name(grant.id)
        )

    def _publish_policy(self, _arg: str) -> None:
        cell, w = self.cell, self.cell.world
        policy = cell.door.publish_policy(w.admin, w.project_id, POLICY_V2)
        cell.trace.emit("policy", version=policy.version)

    def _migrate(self, _arg: str) -> None:
        cell, w = self.cell, self.cell.world
        open_ = cell.open_tasks()
        if not open_:
            cell.trace.emit("authority-skipped", action="migrate", why="no open task")
            return
        newest = max(p.version for p in cell.door.policies(w.admin, w.project_id))
        task = cell.door.migrate_task(w.admin, w.tasks[open_[0]].id, policy_version=newest)
        cell.trace.emit("migrate", task=cell.trace.name(task.id), contract=task.contract_hash, policy=newest)

    def _verifier_outage(self, _arg: str) -> None:
        self.cell.verifier_down = True
        self.cell.trace.emit("verifier-outage")

    def _verifier_back(self, _arg: str) -> None:
        self.cell.verifier_down = False
        self.cell.trace.emit("verifier-back")

    def _human_edit(self, arg: str) -> None:
        cell, w = self.cell, self.cell.world
        edit = cell.workload.human_edits[int(arg)]
        merged = apply_change(edit.before, edit.after, cell.mirror.get(edit.path))
        if merged is False or merged is None or merged is True:
            cell.trace.emit(
                "authority-skipped", action="human-edit", commit=edit.commit, path=edit.path, why="conflict"
            )
            return
        revision = cell.door.read_revision(w.human, w.project_id, edit.path)
        digest = cell.door.put_blob(w.human, merged)
        art = cell.door.edit_artifact(w.human, w.project_id, edit.path, digest, revision)
        cell.mirror[edit.path] = merged
        cell.trace.emit(
            "write",
            path=edit.path,
            by="human",
            commit=edit.commit,
            digest="sha256:" + hashlib.sha256(merged).hexdigest(),
            revision=art.revision,
        )


def _plan(seed: int, edits: int) -> list[tuple[int, str, str]]:
    rng = random.Random(f"studiolo-eval-authority:{seed}")
    agent = rng.choice(AGENTS)
    revoke = rng.randint(4, 30)
    publish = rng.randint(10, 40)
    outage = rng.randint(5, 35)
    plan = [
        (rng.randint(6, 20), "reassign", ""),
        (revoke, "revoke", agent),
        (revoke + 10, "regrant", agent),
        (publish, "publish-policy", ""),
        (publish + rng.randint(1, 10), "migrate", ""),
        (outage, "verifier-outage", ""),
        (outage + 6, "verifier-back", ""),
    ]
    plan += [(rng.randint(3, 45), "human-edit", str(i)) for i in range(edits)]
    return sorted(plan)
