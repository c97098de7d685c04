"""The requester against honest and hostile remotes whose artifacts are still arriving: every
terminal state waits for its signed manifest; bytes still arriving are waited for, and only a
mismatch of the declared bytes is an integrity failure (issue 33, items 10 and 11)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo.core.model import TaskStatus
from studiolo.core.remote import RemoteState
from studiolo.keys import ServiceKey
from tests.faces.a2a.remote_agent import Scenario, remote_agent
from tests.faces.a2a.test_requester import BIG, Side, _published, make_side

TEXT = b"attested: every control holds\n" * 100  # 3,100 bytes, inline


@pytest.fixture
def key() -> ServiceKey:
    return ServiceKey.generate()


@pytest.fixture
def side(tmp_path: Path, key: ServiceKey) -> Iterator[Side]:
    s = make_side(tmp_path, {key.kid: key.public})
    s.requester.start()
    try:
        yield s
    finally:
        s.requester.stop()


@pytest.mark.parametrize(
    ("end", "state"), [("fail", RemoteState.REMOTE_FAILED), ("cancel", RemoteState.REMOTE_CANCELED)]
)
def test_a_manifest_lagging_a_failed_or_canceled_state_is_waited_for(
    side: Side, key: ServiceKey, end: str, state: RemoteState
) -> None:
    """The remote says FAILED (or CANCELED) first; its signed manifest and artifact land later.
    Trusting the two agreeing reads before them would record the end without its evidence."""
    scenario = Scenario(inline={"report.txt": TEXT}, end=end, held="manifest", lag=1.0)
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        side.wait(d.id, RemoteState.AWAITING)
        time.sleep(0.3)
        assert side.world.coord.remote_state(d.id).state is RemoteState.AWAITING  # not yet trusted
        out = side.wait(d.id, state)
    assert out.evidence["manifest"] is not None and out.evidence["kid"] == key.kid
    assert [p["name"] for p in out.evidence["payloads"]] == ["report.txt"]
    assert side.task_status() is TaskStatus.OPEN and _published(side, d) == {}


def test_a_remote_that_fails_without_ever_signing_is_indeterminate_at_the_bound(
    tmp_path: Path, key: ServiceKey
) -> None:
    """The rule's cost: no manifest, no trust; an operator can only reject it (a failed remote
    never finalizes)."""
    side = make_side(tmp_path, {key.kid: key.public}, bound=1.0)
    side.requester.start()
    try:
        with remote_agent(Scenario(end="fail", held="manifest", lag=None), key) as agent:
            d = side.delegate(agent)
            out = side.wait(d.id, RemoteState.INDETERMINATE)
    finally:
        side.requester.stop()
    assert out.reason == "no_manifest" and out.evidence["remote_state"] == "failed"
    c, w = side.world.coord, side.world
    assert side.task_status() is TaskStatus.CLAIMED  # held for the operator
    done = c.review_remote(w.admin, d.id, "reject", "the remote failed and signed nothing")
    assert done.state is RemoteState.REJECTED and side.task_status() is TaskStatus.OPEN


def test_a_chunked_inline_artifact_still_growing_is_waited_for(side: Side, key: ServiceKey) -> None:
    scenario = Scenario(inline={"report.txt": TEXT}, chunks=3, held="last_chunk", lag=1.0)
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        side.wait(d.id, RemoteState.AWAITING)
        time.sleep(0.3)
        assert side.world.coord.remote_state(d.id).state is RemoteState.AWAITING  # two of three parts
        done = side.wait(d.id, RemoteState.FINALIZED)
    assert done.completion_id and _published(side, d) == {"report.txt": TEXT}


def test_a_two_part_inline_artifact_verifies(side: Side, key: ServiceKey) -> None:
    scenario = Scenario(inline={"report.txt": TEXT}, chunks=2)
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        side.wait(d.id, RemoteState.FINALIZED)
    assert _published(side, d) == {"report.txt": TEXT}


def test_a_detached_file_served_short_with_200_is_waited_for(side: Side, key: ServiceKey) -> None:
    scenario = Scenario(detached={"bundle.bin": BIG}, serve={"bundle.bin": BIG[: len(BIG) // 3]})
    scenario.release("bundle.bin")
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        side.wait(d.id, RemoteState.AWAITING)
        deadline = time.monotonic() + 10
        while scenario.fetches.count("bundle.bin") < 2:  # served short, twice: still waiting
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert side.world.coord.remote_state(d.id).state is RemoteState.AWAITING
        del scenario.serve["bundle.bin"]  # the rest of the file lands
        done = side.wait(d.id, RemoteState.FINALIZED)
    assert done.completion_id and _published(side, d)["bundle.bin"] == BIG


@pytest.mark.parametrize(
    ("sent", "code"),
    [
        (b"X" + TEXT[1:], "hash_mismatch"),  # the declared number of bytes, other bytes
        (TEXT + b"appended", "size_mismatch"),  # more bytes than were signed
    ],
)
def test_a_chunked_inline_artifact_that_is_not_what_was_signed(
    side: Side, key: ServiceKey, sent: bytes, code: str
) -> None:
    scenario = Scenario(inline={"report.txt": TEXT}, sent={"report.txt": sent}, chunks=2)
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        out = side.wait(d.id, RemoteState.INTEGRITY_FAILED)
    assert out.reason == code and out.evidence["artifact"] == "file:report.txt"
    assert out.evidence["actual_size"] == len(sent) and out.evidence["signed_size"] == len(TEXT)
    assert side.task_status() is TaskStatus.OPEN and _published(side, d) == {}
