"""The finite schedule space of the bounded study (report §6.1).

A schedule is one total order of the main chain
``read → candidate → trusted-verify → preflight → commit`` interleaved with a
subset of at most three environment events, each occurring once.  When both
``expire`` and ``reassign`` occur, ``expire`` comes first.  Every topological
ordering of that partial order is one schedule.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Event(StrEnum):
    """Every event that can appear in a schedule."""

    READ = "read"
    CANDIDATE = "candidate"
    TRUSTED_VERIFY = "trusted-verify"
    PREFLIGHT = "preflight"
    COMMIT = "commit"
    INPUT_EDIT = "input-edit"
    ARTIFACT_EDIT = "artifact-edit"
    EXPIRE = "expire"
    REASSIGN = "reassign"
    REVOKE = "revoke"
    PUBLISH_POLICY = "publish-policy"


MAIN_CHAIN: tuple[Event, ...] = (
    Event.READ,
    Event.CANDIDATE,
    Event.TRUSTED_VERIFY,
    Event.PREFLIGHT,
    Event.COMMIT,
)
ENVIRONMENT: tuple[Event, ...] = (
    Event.INPUT_EDIT,
    Event.ARTIFACT_EDIT,
    Event.EXPIRE,
    Event.REASSIGN,
    Event.REVOKE,
    Event.PUBLISH_POLICY,
)
MAX_ENVIRONMENT_EVENTS = 3

Schedule = tuple[Event, ...]
Precedence = tuple[tuple[Event, Event], ...]


@dataclass(frozen=True)
class Scenario:
    """A subset of environment events and the orderings it admits."""

    environment: tuple[Event, ...]

    @property
    def events(self) -> tuple[Event, ...]:
        return self.environment + MAIN_CHAIN

    @property
    def precedence(self) -> Precedence:
        chain = tuple(itertools.pairwise(MAIN_CHAIN))
        if Event.EXPIRE in self.environment and Event.REASSIGN in self.environment:
            return (*chain, (Event.EXPIRE, Event.REASSIGN))
        return chain

    @property
    def shape(self) -> str:
        """The combinatorial shape used by the report's sanity checks."""
        size = len(self.environment)
        if size == 0:
            return "none"
        ordered = ", expire before reassign" if len(self.precedence) > len(MAIN_CHAIN) - 1 else ""
        return f"{size} event{'s' if size > 1 else ''}{ordered}"

    def orderings(self) -> Iterator[Schedule]:
        return linear_extensions(self.events, self.precedence)

    def expected_orderings(self) -> int:
        """Closed form, independent of the enumeration.

        ``k`` events inserted among the five chain events: (5+k)!/5! orderings;
        the expire-before-reassign constraint keeps half of them.
        """
        k = len(self.environment)
        orderings = math.perm(len(MAIN_CHAIN) + k, k)
        if len(self.precedence) > len(MAIN_CHAIN) - 1:
            orderings //= 2
        return orderings


def scenarios() -> tuple[Scenario, ...]:
    """Every subset of zero to three environment events, smallest first."""
    return tuple(
        Scenario(subset)
        for size in range(MAX_ENVIRONMENT_EVENTS + 1)
        for subset in itertools.combinations(ENVIRONMENT, size)
    )


def all_schedules() -> tuple[Schedule, ...]:
    """Every schedule, in a fixed order (by scenario, then by ordering)."""
    return tuple(order for scenario in scenarios() for order in scenario.orderings())


def linear_extensions(events: Sequence[Event], precedence: Precedence) -> Iterator[Schedule]:
    """Every total order of ``events`` that respects ``precedence``.

    At each step the candidates are tried in the order of ``events``, so an
    environment event listed first is placed as early as possible first.
    """
    before: dict[Event, frozenset[Event]] = {
        event: frozenset(a for a, b in precedence if b == event) for event in events
    }
    yield from _extend((), tuple(events), before)


def _extend(
    prefix: Schedule, remaining: tuple[Event, ...], before: dict[Event, frozenset[Event]]
) -> Iterator[Schedule]:
    if not remaining:
        yield prefix
        return
    placed = frozenset(prefix)
    for event in remaining:
        if before[event] <= placed:
            rest = tuple(e for e in remaining if e != event)
            yield from _extend((*prefix, event), rest, before)


@dataclass(frozen=True)
class ShapeCheck:
    """One sanity check: every scenario of a shape has the closed-form ordering count."""

    shape: str
    scenarios: int
    orderings_each: int
    expected_each: int
    uniform: bool

    @property
    def ok(self) -> bool:
        return self.uniform and self.orderings_each == self.expected_each


@dataclass(frozen=True)
class ScheduleSummary:
    """Counts describing the schedule space, with their sanity checks."""

    scenarios: int
    schedules: int
    expected_schedules: int
    shapes: tuple[ShapeCheck, ...]

    @property
    def ok(self) -> bool:
        return self.schedules == self.expected_schedules and all(s.ok for s in self.shapes)


def summarize(schedules: Sequence[Schedule]) -> ScheduleSummary:
    """Count the enumerated schedules per scenario and compare with the closed form."""
    per_scenario = Counter(frozenset(schedule) - frozenset(MAIN_CHAIN) for schedule in schedules)
    by_shape: dict[str, list[tuple[int, int]]] = {}
    every = scenarios()
    for scenario in every:
        enumerated = per_scenario[frozenset(scenario.environment)]
        by_shape.setdefault(scenario.shape, []).append((enumerated, scenario.expected_orderings()))
    return ScheduleSummary(
        scenarios=len(every),
        schedules=len(schedules),
        expected_schedules=sum(s.expected_orderings() for s in every),
        shapes=tuple(_shape_check(shape, counts) for shape, counts in by_shape.items()),
    )


def _shape_check(shape: str, counts: list[tuple[int, int]]) -> ShapeCheck:
    enumerated = [n for n, _ in counts]
    expected = [e for _, e in counts]
    return ShapeCheck(
        shape=shape,
        scenarios=len(counts),
        orderings_each=enumerated[0],
        expected_each=expected[0],
        uniform=len(set(enumerated)) == 1 and enumerated == expected,
    )
