"""Delegating a Studiolo task to a real remote A2A agent (a2a-sdk, another organisation): the
two-phase quiescence check, the state machine, and the completion contract, end to end."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client.errors import A2AClientError, A2AClientTimeoutError
from typer.testing import CliRunner

from studiolo._exceptions import InvalidRequest
from studiolo.client import Client
from studiolo.core.model import TaskStatus
from studiolo.core.remote import RemoteDelegation, RemoteState
from studiolo.faces.cli import build_app
from studiolo.faces.http.server import ServerThread
from studiolo.keys import ServiceKey
from studiolo.settings import Settings
from studiolo.workers.a2a.capped import CappedTransport, ResponseTooLarge
from studiolo.workers.a2a.origins import OriginRefused
from studiolo.workers.a2a.requester import Requester, _transient, fetch_verified_card
from tests.auditcheck import check, load_deadlines, load_events
from tests.faces.a2a.conftest import Live, work_task
from tests.faces.a2a.remote_agent import RemoteAgent, Scenario, remote_agent
from tests.world import World, build_world

BIG = bytes(range(256)) * 4096  # 1 MiB: a detached artifact


@dataclass
class Side:
    """The requesting Studiolo: a ledger on a real clock, a requester, a task to delegate."""

    world: World
    requester: Requester
    task_id: str

    def delegate(self, agent: RemoteAgent) -> RemoteDelegation:
        c, w = self.world.coord, self.world
        org = c.set_remote_origins(w.admin, w.project_id, "acme", [agent.url])  # loopback: named
        card = asyncio.run(fetch_verified_card(agent.url, org, deadline=5.0))
        d = c.delegate_remote(
            w.admin, self.task_id, "acme", agent_url=agent.url, card_digest=card.digest, card_kid=card.kid
        )
        self.requester.kick()
        return d

    def wait(self, dlg_id: str, *states: RemoteState, timeout: float = 15) -> RemoteDelegation:
        deadline = time.monotonic() + timeout
        while True:
            d = self.world.coord.remote_state(dlg_id)
            if d.state in states:
                return d
            assert time.monotonic() < deadline, f"still {d.state.value}, waited for {states}"
            time.sleep(0.02)

    def task_status(self) -> TaskStatus:
        return self.world.coord.task_view(self.world.admin, self.task_id).task.status


def settings_for(url: str, bound: float = 5.0) -> Settings:
    return Settings(
        database_url=url,
        a2a_poll_seconds=0.05,
        a2a_quiescence_bound=bound,
        a2a_backoff_initial=0.05,
        a2a_backoff_max=0.2,
        a2a_confirm_seconds=0.05,
        a2a_request_timeout=5.0,
    )


def make_side(tmp_path: Path, pinned: dict[str, str], bound: float = 5.0) -> Side:
    world = build_world(tmp_path, time.time)
    c = world.coord
    c.add_remote_org(world.admin, world.project_id, "acme", pinned)
    task = world.new_task("attest the bundle", criteria={"attested": "a2a-acme@1"}, scope=["remote/**"])
    requester = Requester(c, settings_for(c.store.url, bound))
    return Side(world, requester, task.id)


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


def _published(side: Side, d: RemoteDelegation) -> dict[str, bytes]:
    c, w = side.world.coord, side.world
    arts = c.list_artifacts(w.admin, w.project_id, f"remote/acme/{d.id}/")
    return {
        a.path.rsplit("/", 1)[-1]: c.read_artifact(w.admin, w.project_id, a.path).data or b"" for a in arts
    }


def test_a_detached_artifact_after_completed_is_waited_for(side: Side, key: ServiceKey) -> None:
    scenario = Scenario(detached={"bundle.bin": BIG})
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        waiting = side.wait(d.id, RemoteState.AWAITING)
        assert waiting.remote_state == "completed"
        deadline = time.monotonic() + 10
        while "bundle.bin" not in scenario.fetches:  # asked for, and not there yet
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert side.world.coord.remote_state(d.id).state is RemoteState.AWAITING
        assert side.task_status() is TaskStatus.CLAIMED
        scenario.release("bundle.bin")
        done = side.wait(d.id, RemoteState.FINALIZED)
    assert side.task_status() is TaskStatus.COMPLETED and done.completion_id
    assert _published(side, d) == {"bundle.bin": BIG, "summary.txt": b"attested\n"}
    url = side.world.coord.store.url  # an independent replay of the log agrees with the commit
    assert check(load_events(url), load_deadlines(url)) == []
    message = scenario.messages[0]
    assert dict(message.metadata)["title"] == "attest the bundle"


def test_a_tampered_artifact_fails_integrity_and_nothing_is_finalized(side: Side, key: ServiceKey) -> None:
    scenario = Scenario(detached={"bundle.bin": BIG}, serve={"bundle.bin": BIG[:-1] + b"X"})
    scenario.release("bundle.bin")
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        out = side.wait(d.id, RemoteState.INTEGRITY_FAILED)
    assert out.reason == "hash_mismatch" and out.evidence["artifact"] == "detached:bundle.bin"
    assert out.evidence["actual_sha256"] != out.evidence["signed_sha256"]
    assert out.evidence["manifest"] in out.evidence["blobs"]  # the signed manifest is kept
    c, w = side.world.coord, side.world
    assert c.get_blob(w.admin, out.evidence["actual"]) == BIG[:-1] + b"X"  # and what was served
    assert side.task_status() is TaskStatus.OPEN and _published(side, d) == {}


def test_a_manifest_signed_by_an_unpinned_key(side: Side, key: ServiceKey) -> None:
    scenario = Scenario(manifest_key=ServiceKey.generate())
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        out = side.wait(d.id, RemoteState.INTEGRITY_FAILED)
    assert out.reason == "bad_signature" and _published(side, d) == {}
    assert side.task_status() is TaskStatus.OPEN


def test_a_card_signed_by_an_unpinned_key_is_refused(side: Side) -> None:
    c, w = side.world.coord, side.world  # acme pins `key`; this agent signs with its own
    with remote_agent(Scenario()) as agent, pytest.raises(InvalidRequest) as err:
        org = c.set_remote_origins(w.admin, w.project_id, "acme", [agent.url])
        asyncio.run(fetch_verified_card(agent.url, org, deadline=5.0))
    assert err.value.reason == "signature_invalid"


@pytest.mark.parametrize(
    ("end", "state"), [("fail", RemoteState.REMOTE_FAILED), ("cancel", RemoteState.REMOTE_CANCELED)]
)
def test_remote_failed_or_canceled_with_artifacts_in_flight(
    side: Side, key: ServiceKey, end: str, state: RemoteState
) -> None:
    scenario = Scenario(detached={"partial.bin": b"p" * 1000}, end=end)
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        side.wait(d.id, RemoteState.AWAITING)
        time.sleep(0.2)
        assert side.world.coord.remote_state(d.id).state is RemoteState.AWAITING  # still waits
        scenario.release("partial.bin")
        out = side.wait(d.id, state)
    assert out.evidence["remote_state"] == {"fail": "failed", "cancel": "canceled"}[end]
    assert [p["name"] for p in out.evidence["payloads"]] == ["summary.txt", "partial.bin"]
    assert side.task_status() is TaskStatus.OPEN and _published(side, d) == {}


def test_an_artifact_that_never_arrives_is_indeterminate_then_an_operator_finalizes(
    tmp_path: Path, key: ServiceKey
) -> None:
    side = make_side(tmp_path, {key.kid: key.public}, bound=1.0)
    side.requester.start()
    try:
        with remote_agent(Scenario(detached={"bundle.bin": BIG}), key) as agent:
            d = side.delegate(agent)
            out = side.wait(d.id, RemoteState.INDETERMINATE)
    finally:
        side.requester.stop()
    assert out.reason == "missing_artifacts" and out.evidence["missing"] == ["detached:bundle.bin"]
    assert side.task_status() is TaskStatus.CLAIMED  # held for the operator
    c, w = side.world.coord, side.world
    assert [q.id for q in c.remote_review_queue(w.admin, w.project_id)] == [d.id]
    done = c.review_remote(w.admin, d.id, "finalize", "bundle confirmed out of band")
    assert done.state is RemoteState.FINALIZED and side.task_status() is TaskStatus.COMPLETED
    assert _published(side, d) == {"summary.txt": b"attested\n"}
    url = c.store.url
    assert check(load_events(url), load_deadlines(url)) == []


def test_the_local_task_reassigned_while_the_remote_works(side: Side, key: ServiceKey) -> None:
    scenario = Scenario(detached={"bundle.bin": BIG})
    c, w = side.world.coord, side.world
    with remote_agent(scenario, key) as agent:
        d = side.delegate(agent)
        side.wait(d.id, RemoteState.AWAITING)
        c.grant(w.admin, w.project_id, w.agent.id, ["write", "claim", "complete"], ["remote/**"])
        c.reassign(w.admin, side.task_id, w.agent.id)
        scenario.release("bundle.bin")
        out = side.wait(d.id, RemoteState.REFUSED)
    assert "attempt_superseded" in (out.reason or "") and _published(side, d) == {}
    assert side.task_status() is TaskStatus.CLAIMED


def test_studiolo_delegates_to_another_studiolo_over_its_a2a_face(tmp_path: Path, live: Live) -> None:
    """Two ledgers, two servers: A delegates through its HTTP API and CLI; B's agent and verifier
    do the work under B's contract; A verifies B's signed manifest, fetches the large file from
    B's URL part (with A's credential for B) and completes under A's contract."""
    b = live.world.coord
    b_key = b.signing_key()
    a = build_world(tmp_path / "a", time.time)
    settings = replace(
        settings_for(a.coord.store.url), a2a_credentials={"partner": live.requester_token}, public_url=""
    )
    big = b"0123456789abcdef" * (32 * 1024)  # 512 KiB: above B's inline limit, a URL part
    with ServerThread(a.coord, settings) as server:
        token = a.coord.rotate_token(a.admin, a.admin.id).token
        with Client(server.url, token, project=a.project_id) as client:
            client.add_remote_org("partner", {b_key.kid: b_key.public}, origins=[live.url])
            task = client.create_task(
                "fix the answer", criteria={"done": "a2a-partner@1"}, scope=["remote/**"]
            )
            d = client.delegate(task.id, "partner", live.url)
            assert d.state == "delegated" and d.pinned == {b_key.kid: b_key.public}
            working = _wait_http(client, d.id, "remote-working")
            requester = b.authenticate(live.requester_token)
            b_task = b.delegated(requester, str(working.remote_task_id)).view
            assert b_task is not None and b_task.task.title == "fix the answer"
            work_task(live, b_task.task.id, files={"src/answer.txt": big})
            done = _wait_http(client, d.id, "finalized")
            shown = CliRunner().invoke(
                build_app(), ["--url", server.url, "--token", token, "delegate", "show", d.id, "--json"]
            )
    assert shown.exit_code == 0, shown.output
    assert '"state": "finalized"' in shown.output
    assert done.completion_id and a.coord.task_view(a.admin, task.id).task.status is TaskStatus.COMPLETED
    published = {
        art.path.rsplit("/", 1)[-1]: a.coord.read_artifact(a.admin, a.project_id, art.path).data
        for art in a.coord.list_artifacts(a.admin, a.project_id, f"remote/partner/{d.id}/")
    }
    assert published["answer.txt"] == big and "completion-receipt" in published


def _wait_http(client: Client, dlg_id: str, state: str, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while (d := client.delegation(dlg_id)).state != state:
        assert time.monotonic() < deadline, f"still {d.state} ({d.reason}), waited for {state}"
        time.sleep(0.05)
    return d


def test_a_remote_answer_over_the_response_cap_is_never_read(tmp_path: Path, key: ServiceKey) -> None:
    """GetTask answers carry inline artifacts: one over the cap is refused as it streams in, so
    the remote task is never seen terminal and nothing is published."""
    side = make_side(tmp_path, {key.kid: key.public})
    side.requester = Requester(
        side.world.coord, replace(side.requester.settings, a2a_max_response_bytes=256 * 1024)
    )
    side.requester.start()
    try:
        with remote_agent(Scenario(inline={"big.bin": b"b" * (512 * 1024)}), key) as agent:
            d = side.delegate(agent)
            side.wait(d.id, RemoteState.REMOTE_WORKING)
            time.sleep(0.5)
            assert side.world.coord.remote_state(d.id).state is RemoteState.REMOTE_WORKING
    finally:
        side.requester.stop()
    assert _published(side, d) == {} and side.task_status() is TaskStatus.CLAIMED


@pytest.mark.parametrize("declared", [True, False])
def test_the_capped_transport(declared: bool) -> None:
    asyncio.run(_capped(declared))


async def _capped(declared: bool) -> None:
    body = b"x" * 2000

    def answer(request: httpx.Request) -> httpx.Response:
        if declared:
            return httpx.Response(200, content=body)
        return httpx.Response(200, stream=httpx.ByteStream(body))  # no Content-Length

    capped = CappedTransport(httpx.MockTransport(answer), cap=1000)
    async with httpx.AsyncClient(transport=capped) as http:
        with pytest.raises(ResponseTooLarge):
            await http.get("http://remote.test/big")
    fits = CappedTransport(httpx.MockTransport(answer), cap=2000)
    async with httpx.AsyncClient(transport=fits) as http:
        assert (await http.get("http://remote.test/big")).content == body


def _wrapped(cause: BaseException) -> A2AClientError:
    try:
        raise A2AClientError("wrapped by the SDK") from cause
    except A2AClientError as exc:
        return exc


def _status(code: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://remote.test/a2a/jsonrpc")
    return httpx.HTTPStatusError("status", request=request, response=httpx.Response(code, request=request))


def test_which_send_failures_are_tried_again() -> None:
    """The SDK wraps network errors and HTTP statuses in A2AClientError: the cause decides."""
    assert _transient(_wrapped(httpx.ConnectError("refused")))
    assert _transient(A2AClientTimeoutError("slow"))
    assert _transient(_wrapped(_status(503))) and _transient(_wrapped(_status(429)))
    assert not _transient(_wrapped(_status(400)))
    assert not _transient(A2AClientError("the remote refused"))
    assert not _transient(ValueError("malformed"))
    off = OriginRefused("http://10.0.0.1/a2a is not an allowed origin")  # a TransportError, but final
    assert not _transient(_wrapped(off))


def test_two_service_processes_on_one_ledger_send_a_delegation_once(side: Side, key: ServiceKey) -> None:
    """A second requester (another `serve` worker) on the same ledger waits for the lease."""
    other = Requester(side.world.coord, side.requester.settings)
    other.start()
    try:
        scenario = Scenario()
        with remote_agent(scenario, key) as agent:
            d = side.delegate(agent)
            other.kick()
            side.wait(d.id, RemoteState.FINALIZED)
            time.sleep(0.3)
    finally:
        other.stop()
    assert len(scenario.messages) == 1 and side.task_status() is TaskStatus.COMPLETED


def test_stream_events_only_wake_the_next_poll(tmp_path: Path, key: ServiceKey) -> None:
    """With a 60 s poll interval, only a stream hint can make the requester read the remote
    task again within the test's 15 s: the terminal state still comes from that GetTask."""
    side = make_side(tmp_path, {key.kid: key.public})
    side.requester = Requester(side.world.coord, replace(side.requester.settings, a2a_poll_seconds=60.0))
    side.requester.start()
    scenario = Scenario(streaming=True, work_seconds=0.5)
    try:
        with remote_agent(scenario, key) as agent:
            d = side.delegate(agent)
            working = side.wait(d.id, RemoteState.REMOTE_WORKING)
            assert working.remote_state in ("submitted", "working")
            done = side.wait(d.id, RemoteState.FINALIZED, timeout=15)
    finally:
        side.requester.stop()
    assert done.remote_state == "completed" and side.task_status() is TaskStatus.COMPLETED
