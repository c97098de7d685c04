"""`HttpPort` speaks the routes it documents: checked here against a small stand-in for the
API (an `httpx.MockTransport` over the coordinator), including problem+json errors."""

from __future__ import annotations

import json
from urllib.parse import unquote

import httpx
import pytest

from studiolo._exceptions import InvalidRequest, NotFound, StudioloError
from studiolo.core.model import ReceiptResult
from studiolo.verifier.http import HttpPort
from tests.verifier.conftest import MakeRunner
from tests.world import World


def _stand_in(world: World, token: str) -> httpx.MockTransport:
    coord = world.coord

    def handle(request: httpx.Request) -> httpx.Response:
        try:
            caller = coord.authenticate(request.headers.get("Authorization", "").removeprefix("Bearer "))
            return _route(request, caller)
        except StudioloError as exc:
            problem = {"type": f"urn:studiolo:reason:{exc.reason}", "status": exc.status, **exc.to_dict()}
            return httpx.Response(
                exc.status, json=problem, headers={"Content-Type": "application/problem+json"}
            )

    def _route(request: httpx.Request, caller: object) -> httpx.Response:
        from studiolo.core.model import Principal

        assert isinstance(caller, Principal)
        parts = [unquote(p) for p in request.url.path.split("/")[2:]]
        match request.method, parts:
            case "GET", ["verifications"]:
                project, limit = request.url.params["project_id"], int(request.url.params["limit"])
                return httpx.Response(
                    200, json=[i.to_json() for i in coord.verification_queue(caller, project, limit)]
                )
            case "GET", ["candidates", cid, "tree"]:
                return httpx.Response(200, json=coord.candidate_tree(caller, cid).to_json())
            case "GET", ["blobs", digest]:
                return httpx.Response(200, content=coord.get_blob(caller, digest))
            case "POST", ["blobs"]:
                return httpx.Response(201, json={"digest": coord.put_blob(caller, request.content)})
            case "POST", ["candidates", cid, "receipts"]:
                payload = json.loads(request.content)
                receipt = coord.submit_receipt(caller, cid, payload["body"], payload["signature"])
                return httpx.Response(201, json={"id": receipt.id})
        return httpx.Response(404, json={"reason": "not_found", "detail": "no route"})

    return httpx.MockTransport(handle)


@pytest.fixture
def http_port(world: World) -> HttpPort:
    token = world.coord.rotate_token(world.admin, world.verifier.id).token
    client = httpx.Client(
        base_url="http://studiolo.test",
        headers={"Authorization": f"Bearer {token}"},
        transport=_stand_in(world, token),
    )
    return HttpPort(client, world.project_id)


def test_the_runner_works_over_http(world: World, make_runner: MakeRunner, http_port: HttpPort) -> None:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    [report] = make_runner(port=http_port).run_once()
    assert report.status == "pass", report.summary
    assert [r.result for r in world.coord.receipts(world.agent, cand.id)] == [ReceiptResult.PASS]
    world.complete(task, attempt, cand, [report.receipt_id or ""])
    http_port.close()


def test_problems_become_the_error_tree(world: World, http_port: HttpPort) -> None:
    with pytest.raises(NotFound) as missing:
        http_port.blob("sha256:" + "0" * 64)
    assert (missing.value.reason, missing.value.status) == ("blob_missing", 404)
    with pytest.raises(NotFound):
        http_port.post_receipt("cnd_nothere", {}, "x")
    attempt = world.coord.claim(world.agent, world.new_task().id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    with pytest.raises(InvalidRequest) as bad:
        http_port.post_receipt(cand.id, {"result": "pass"}, "x")
    assert (bad.value.reason, bad.value.status) == ("invalid_request", 400)


def test_a_non_json_error_still_raises(world: World) -> None:
    transport = httpx.MockTransport(lambda _r: httpx.Response(502, text="bad gateway"))
    port = HttpPort(httpx.Client(base_url="http://x", transport=transport), world.project_id)
    with pytest.raises(StudioloError) as exc:
        port.work()
    assert exc.value.status == 502 and "bad gateway" in exc.value.detail
