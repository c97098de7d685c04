"""The fixed setting of the study: the contracts and the world's parameters.

The task is to double a number.  ``DOUBLING`` is the contract every primary
schedule pins; the other two exist so the negative controls can cite another
task's contract, or pin a contract whose admitted checker is inadequate.
"""

from __future__ import annotations

from studiolo.study.world import Contract, Setup

__all__ = ["DOUBLING", "INTEGER_ONLY", "OTHER_TASK", "study_setup"]

DOUBLING = Contract("task-1", (("answer", "double@1"),), "behavior-v1")
OTHER_TASK = Contract("task-2", (("answer", "double@1"),), "behavior-v1")
INTEGER_ONLY = Contract("task-1", (("answer", "integer@1"),), "behavior-v1")


def study_setup(pinned: Contract = DOUBLING) -> Setup:
    """The world's parameters; every contract the controls cite is registered."""
    return Setup(pinned=pinned, registered=(DOUBLING, OTHER_TASK, INTEGER_ONLY))
