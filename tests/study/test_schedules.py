from __future__ import annotations

import itertools
from collections import Counter

from studiolo.study.schedules import (
    ENVIRONMENT,
    MAIN_CHAIN,
    Event,
    Scenario,
    all_schedules,
    linear_extensions,
    scenarios,
    summarize,
)


def test_there_are_42_scenarios_of_zero_to_three_events() -> None:
    sizes = Counter(len(s.environment) for s in scenarios())
    assert sizes == {0: 1, 1: 6, 2: 15, 3: 20}
    assert len(scenarios()) == 42


def test_ordering_counts_per_shape_match_the_report() -> None:
    expected = {
        "none": 1,
        "1 event": 6,
        "2 events": 42,
        "2 events, expire before reassign": 21,
        "3 events": 336,
        "3 events, expire before reassign": 168,
    }
    for scenario in scenarios():
        assert sum(1 for _ in scenario.orderings()) == expected[scenario.shape]


def test_schedule_total_is_6694_and_the_summary_agrees() -> None:
    schedules = all_schedules()
    summary = summarize(schedules)
    assert len(schedules) == 6694
    assert summary.schedules == summary.expected_schedules == 6694
    assert summary.ok
    assert [(s.shape, s.scenarios) for s in summary.shapes] == [
        ("none", 1),
        ("1 event", 6),
        ("2 events", 14),
        ("2 events, expire before reassign", 1),
        ("3 events", 16),
        ("3 events, expire before reassign", 4),
    ]


def test_every_schedule_respects_the_partial_order() -> None:
    schedules = all_schedules()
    assert len(set(schedules)) == len(schedules)
    for schedule in schedules:
        assert tuple(e for e in schedule if e in MAIN_CHAIN) == MAIN_CHAIN
        environment = [e for e in schedule if e in ENVIRONMENT]
        assert len(environment) == len(set(environment)) <= 3
        if Event.EXPIRE in schedule and Event.REASSIGN in schedule:
            assert schedule.index(Event.EXPIRE) < schedule.index(Event.REASSIGN)


def test_enumeration_matches_brute_force_permutations() -> None:
    scenario = Scenario((Event.EXPIRE, Event.REASSIGN, Event.REVOKE))
    events = scenario.events
    brute = {
        p
        for p in itertools.permutations(events)
        if all(p.index(a) < p.index(b) for a, b in scenario.precedence)
    }
    assert set(linear_extensions(events, scenario.precedence)) == brute
    assert len(brute) == 168


def test_schedules_are_ordered_shortest_first() -> None:
    lengths = [len(s) for s in all_schedules()]
    assert lengths == sorted(lengths)
