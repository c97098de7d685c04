"""kill -9 a serving process at random moments during completion bursts, restart it, and
show: every completion whose answer reached a client is recorded, no completion is partial,
and replaying the same request id recovers every request whose answer was lost."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from studiolo import StudioloError
from studiolo.client import Client
from tests.scale.checker import check_run, load_rows
from tests.scale.cluster import Cluster, ready_completions, seed_project

BURSTS = 4
PER_BURST = 10
_STRIKE_BY = 0.06  # seconds into a burst of requests sent 10 ms apart


class _Burst:
    """Clients send one burst of completions; the killer strikes after `kill_after` answers."""

    def __init__(self, base: str, items: list[dict[str, Any]], answers: list[dict[str, Any]]) -> None:
        self.items, self.answers = items, answers
        self.transport = httpx.HTTPTransport()
        self.clients = [Client(base, it["token"], timeout=30, transport=self.transport) for it in items]
        self.stats: Counter[str] = Counter()
        self.answered = threading.Semaphore(0)

    def run(self, rng: random.Random, kill: Any) -> Counter[str]:
        threads = [threading.Thread(target=self._send, args=(i,)) for i in range(len(self.items))]
        started = time.monotonic()
        for t in threads:
            t.start()
        # Strike after a few answers, but always before the last request is sent (at ~90 ms):
        # a group commit may answer everything in flight at once, and a slow server answers
        # late, so waiting for answers alone could let the kill land after the burst.
        for _ in range(rng.randrange(0, len(self.items) // 2)):
            left = started + _STRIKE_BY - time.monotonic()
            if left <= 0 or not self.answered.acquire(timeout=left):
                break
        time.sleep(rng.uniform(0.0, 0.02))
        kill()
        for t in threads:
            t.join()
        self.transport.close()
        return self.stats

    def _send(self, i: int) -> None:
        item, client = self.items[i], self.clients[i]
        rid = item["request"]["request_id"]
        # Staggered over ~100 ms: a server that commits concurrent writes in one group would
        # otherwise answer a whole burst at once, and the kill would land between bursts.
        time.sleep(i * 0.01)
        try:
            done = client.complete(item["task"], **item["request"])
        except httpx.TransportError:
            self.stats["lost"] += 1  # the server died first: the outcome is unknown to the client
            return
        except StudioloError as err:
            self.stats[f"rejected.{err.reason}"] += 1
            self.answers.append({"rid": rid, "outcome": "rejected", "failed": err.failed})
            return
        finally:
            self.answered.release()
        self.stats["answered"] += 1
        outcome = "replay" if done.replay else "accepted"
        c = done.completion
        self.answers.append({"rid": rid, "outcome": outcome, "completion": c.id, "signature": c.signature})


@pytest.mark.slow
def test_kill_9_during_completion_bursts_loses_nothing_answered(ledger_url: str, tmp_path: Path) -> None:
    rng = random.Random(5)
    seed = seed_project(ledger_url, agents=6, tasks=BURSTS * PER_BURST, hot=0)
    ready = ready_completions(seed)
    answers: list[dict[str, Any]] = []
    stats: Counter[str] = Counter()
    with Cluster(ledger_url, 2, tmp_path) as cluster:
        victim, survivor = cluster.replicas
        for burst in range(BURSTS):
            batch = ready[burst * PER_BURST : (burst + 1) * PER_BURST]
            stats.update(_Burst(victim.base, batch, answers).run(rng, victim.kill))  # kill -9 mid-burst
            victim.start()

        # what the clients were told is recorded, and nothing recorded is partial
        before = load_rows(ledger_url)
        found = check_run(before, answers)
        assert found.problems == [], found.problems

        # recovery: every request is replayed with its request id, against another replica
        committed = {c["request_id"]: c for c in before["completions"]}
        for item in ready:
            rid = item["request"]["request_id"]
            with Client(survivor.base, item["token"], timeout=30) as client:
                again = client.complete(item["task"], **item["request"])
            if rid in committed:
                assert again.replay and again.completion.id == committed[rid]["id"], rid
            else:
                assert not again.replay  # it never committed: now it does, exactly once
            answers.append(
                {
                    "rid": rid,
                    "outcome": "replay" if again.replay else "accepted",
                    "completion": again.completion.id,
                    "signature": again.completion.signature,
                }
            )
    after = load_rows(ledger_url)
    found = check_run(after, answers)
    assert found.problems == [], found.problems
    assert len(after["completions"]) == len(ready)  # every task completed exactly once
    assert stats["lost"] > 0, stats  # the kills landed inside the bursts
    assert sum(stats.values()) == len(ready)  # every request: answered, refused, or lost
    print(f"\n{ledger_url.split(':')[0]}: {dict(stats)}; committed before replay: {len(committed)}")
