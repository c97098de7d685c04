"""Delegated work (the A2A face): the intake template a project's admin defines, and the
record of one delegation. Pure values: no I/O, no clock, no SQL."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Delegation", "IntakeTemplate"]


@dataclass(frozen=True)
class IntakeTemplate:
    """The contract a delegated task gets: the requester never supplies it."""

    project_id: str
    name: str
    description: str
    criteria: Mapping[str, str]  # criterion id → checker name@version
    scope: tuple[str, ...]
    policy_version: int | None  # None: the latest policy when the task is created
    created_at: float

    @property
    def skill_id(self) -> str:
        return f"{self.project_id}/{self.name}"

    def contract_json(self) -> dict[str, Any]:
        return {
            "criteria": dict(self.criteria),
            "scope": list(self.scope),
            "policy_version": self.policy_version,
        }


@dataclass(frozen=True)
class Delegation:
    """One A2A task: who asked, through which template, and the Studiolo task it became."""

    id: str  # the A2A task id
    project_id: str
    requester_id: str
    context_id: str
    intake: str
    task_id: str | None  # None: intake refused
    refused: str | None
    message: Mapping[str, Any]  # the requester's message (A2A JSON)
    created_at: float
