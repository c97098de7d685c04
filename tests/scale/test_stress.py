"""Four `studiolo serve` processes on one database, at least 50 concurrent clients, for a
bounded time: claims, heartbeats, candidates, receipts, completions (and identical replays),
revocations, reassignments and direct edits. Afterwards the independent checker replays the
audit log and compares it with every answer the clients received."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scale.checker import check_run, load_rows
from tests.scale.cluster import Cluster, seed_project
from tests.scale.load import LoadPlan, run_load

PLAN = LoadPlan(processes=4, workers_per_process=12, chaos_per_process=1, seconds=15.0, max_iterations=40)


@pytest.mark.slow
def test_four_replicas_and_fifty_clients_keep_the_contract(ledger_url: str, tmp_path: Path) -> None:
    assert PLAN.clients >= 50
    seed = seed_project(ledger_url, agents=24, tasks=100, hot=6)
    with Cluster(ledger_url, 4, tmp_path) as cluster:
        seed.replicas = cluster.urls
        answers, stats = run_load(seed, PLAN, tmp_path)
    found = check_run(load_rows(ledger_url), answers)
    where = ledger_url.split(":")[0]
    print(f"\n{where}: {found.events} events, {found.accepted} accepted, {found.rejected} refused; {stats}")
    assert found.problems == [], found.problems
    assert found.accepted > 0 and found.rejected > 0, stats  # real contention happened
    assert stats["complete.replay"] > 0 and stats["chaos.revoke"] > 0 and stats["chaos.reassign"] > 0, stats
    assert stats["claim"] > found.accepted, stats
