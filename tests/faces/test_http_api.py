"""The HTTP face in-process: authentication, the problem+json shape, limits, every route family."""

from __future__ import annotations

import sqlite3

import httpx
import pytest

from studiolo._exceptions import CompletionRejected, Conflict, InvalidRequest, NotFound, Unauthenticated
from studiolo.keys import verify as verify_signature
from studiolo.settings import Settings
from tests.faces.helpers import Actors, complete, in_process, new_task, submit, verify
from tests.world import World

PROBLEM_KEYS = {"type", "title", "status", "detail", "reason", "failed", "details"}


def raw(actors: Actors, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=actors.url, transport=actors.transport, headers=headers)


def assert_problem(r: httpx.Response, status: int, reason: str) -> dict[str, object]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert set(body) == PROBLEM_KEYS and body["reason"] == reason and body["status"] == status
    assert body["type"] == f"urn:studiolo:reason:{reason}"
    return dict(body)


# authentication ------------------------------------------------------------------------
def test_no_token_is_401_problem(actors: Actors) -> None:
    with raw(actors) as http:
        r = http.get(f"/v1/projects/{actors.world.project_id}/tasks")
    assert_problem(r, 401, "unauthenticated")
    assert r.headers["www-authenticate"] == "Bearer"


def test_unknown_rotated_and_revoked_tokens_are_401(actors: Actors) -> None:
    with raw(actors, "stl_not-a-real-token") as http:
        assert_problem(http.get("/v1/me"), 401, "unauthenticated")
    admin = actors.client("admin")
    old = actors.tokens["agent"]
    fresh = admin.rotate_token(actors.world.agent.id).token
    with raw(actors, old) as http:
        assert_problem(http.get("/v1/me"), 401, "unauthenticated")
    with raw(actors, fresh) as http:
        assert http.get("/v1/me").json()["id"] == actors.world.agent.id
    assert admin.revoke_tokens(actors.world.agent.id) == 1
    with raw(actors, fresh) as http:
        assert_problem(http.get("/v1/me"), 401, "unauthenticated")


def test_the_caller_comes_from_the_token(actors: Actors) -> None:
    me = actors.client("agent2").me()
    assert me.id == actors.world.agent2.id and me.kind == "agent"


def test_another_projects_token_gets_404_never_a_hint(actors: Actors) -> None:
    admin = actors.client("admin")
    task = new_task(admin)
    other = admin.create_project("elsewhere")
    stranger = admin.add_principal("stranger", "agent", project=other.id)
    admin.grant(stranger.principal.id, ["read", "write", "claim", "complete"], project=other.id)
    with raw(actors, stranger.token) as http:
        r = http.get(f"/v1/tasks/{task.id}")
        missing = http.get("/v1/tasks/tsk_doesnotexist")
        assert_problem(r, 404, "task_not_found")
        assert r.json()["detail"].replace(task.id, "X") == missing.json()["detail"].replace(
            "tsk_doesnotexist", "X"
        )
        assert_problem(http.get(f"/v1/projects/{actors.world.project_id}/tasks"), 404, "not_found")
        r = http.post(f"/v1/tasks/{task.id}/attempts", json={})
        assert_problem(r, 404, "task_not_found")


def test_tokens_are_stored_hashed_never_in_clear(actors: Actors, world: World) -> None:
    issued = actors.client("admin").add_principal("newcomer", "agent", project=world.project_id)
    path = world.coord.store.url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        dump = "\n".join(db.iterdump())
    for token in [*actors.tokens.values(), issued.token]:
        assert token not in dump
        assert token.removeprefix("stl_") not in dump
    assert "sha256:" in dump


def test_revoked_grant_gets_the_structured_rejection(actors: Actors, world: World) -> None:
    admin, agent, ver = actors.client("admin"), actors.client("agent"), actors.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    receipt = verify(ver, world, cand)
    admin.grant(world.agent.id, ["read"], ["**"])  # still sees the task
    admin.revoke_grant(world.grants["agent"])
    with raw(actors, actors.tokens["agent"]) as http:
        body = {
            "request_id": "r1",
            "attempt_id": attempt.id,
            "fence": attempt.fence,
            "contract_hash": task.contract_hash,
            "candidate_id": cand.id,
            "evidence": [receipt.id],
        }
        r = http.post(f"/v1/tasks/{task.id}/complete", json=body)
    problem = assert_problem(r, 409, "not_authorized")
    assert problem["failed"] == ["not_authorized"] and problem["title"] == "Completion rejected"
    # what changed: the grant that was revoked, by whom (docs/reasons.md)
    (detail,) = problem["details"]
    (revoked,) = [i for i in detail["items"] if i["kind"] == "revoked_grant"]
    assert revoked["grant_id"] == world.grants["agent"] and revoked["change"]["by"] == world.admin.id
    assert f"Grant {world.grants['agent']} was revoked by" in detail["text"]
    with pytest.raises(CompletionRejected) as info:
        complete(agent, task, attempt, cand, [receipt.id], request_id="r2")
    assert info.value.failed == ("not_authorized",) and info.value.status == 409
    assert info.value.details == (detail,)  # the client's exception carries them as sent


# the problem shape for framework errors ---------------------------------------------------
def test_validation_unknown_route_and_method_are_problems(actors: Actors) -> None:
    with raw(actors, actors.tokens["admin"]) as http:
        p = http.post(f"/v1/projects/{actors.world.project_id}/tasks", json={"title": 3})
        assert_problem(p, 422, "invalid_request")
        assert "criteria" in p.json()["detail"]
        assert_problem(
            http.post("/v1/projects", content=b"{not json", headers={"content-type": "application/json"}),
            422,
            "invalid_request",
        )
        assert_problem(http.get("/v1/nowhere"), 404, "not_found")
        assert_problem(http.delete("/v1/projects"), 405, "method_not_allowed")
        assert_problem(http.get("/v1/tasks/not-an-id"), 400, "invalid_request")


def test_error_tree_is_rebuilt_by_the_client(actors: Actors) -> None:
    admin = actors.client("admin")
    with pytest.raises(NotFound) as nf:
        admin.task("tsk_abcdefgh")
    assert nf.value.reason == "task_not_found"
    with pytest.raises(Conflict) as conflict:
        admin.create_project("demo")
    assert conflict.value.reason == "conflict"
    with pytest.raises(InvalidRequest) as bad:
        admin.artifact("../etc/passwd")
    assert bad.value.reason == "invalid_path"
    with pytest.raises(Unauthenticated):
        actors.client("admin").__class__(actors.url, "stl_nope", transport=actors.transport).me()


def test_request_size_limit_is_413(world: World) -> None:
    settings = Settings(database_url=world.coord.store.url, max_request_bytes=1000)
    with in_process(world, settings) as small, raw(small, small.tokens["agent"]) as http:
        assert http.post("/v1/blobs", content=b"x" * 1000).status_code == 201
        assert_problem(http.post("/v1/blobs", content=b"x" * 1001), 413, "payload_too_large")

        def chunks() -> object:
            yield from (b"y" * 600, b"y" * 600)

        r = http.post("/v1/blobs", content=chunks())  # no Content-Length: counted as it streams
        assert_problem(r, 413, "payload_too_large")


# route families ---------------------------------------------------------------------------
def test_blobs_artifacts_collections_and_direct_edits(actors: Actors) -> None:
    human = actors.client("human")
    digest = human.put_blob(b"hello\n").digest
    assert human.get_blob(digest) == b"hello\n"
    art = human.edit_artifact("docs//./guide.md", digest, 0)
    assert (art.path, art.revision, art.deleted) == ("docs/guide.md", 1, False)
    assert human.artifact("docs/guide.md").digest == digest
    assert [a.path for a in human.artifacts("docs")] == ["docs/guide.md"]
    with pytest.raises(Conflict) as stale:
        human.edit_artifact("docs/guide.md", None, 0)
    assert stale.value.reason == "revision_conflict"
    gone = human.edit_artifact("docs/guide.md", None, 1)
    assert gone.deleted and gone.revision == 2
    assert human.artifact("docs/guide.md", revision=1).digest == digest
    assert human.collection("docs/").revision >= 2
    assert human.revision("docs/never.md") == 0


def test_task_lifecycle_handoff_observation_and_views(actors: Actors, world: World) -> None:
    admin, agent, agent2 = actors.client("admin"), actors.client("agent"), actors.client("agent2")
    task = new_task(admin)
    assert [t.fact for t in agent.tasks()] == ["open"]
    attempt = agent.claim(task.id, lease_seconds=30)
    with pytest.raises(Conflict) as taken:
        agent2.claim(task.id)
    assert taken.value.reason == "task_already_claimed"
    assert agent.heartbeat(attempt.id, 60).lease_deadline == world.clock() + 60
    h = agent.handoff(attempt.id, artifacts={"src/input.txt": 1}, obligations=["double it"], notes="n")
    assert agent2.handoff_view(task.id).artifacts["src/input.txt"].current is True
    assert h.obligations == ["double it"]
    assert agent.release(attempt.id).status == "released"
    assert agent.task(task.id).task.status == "open"
    moved = admin.migrate(task.id, scope=["src/**", "docs/**"])
    assert moved.contract_hash != task.contract_hash
    assert admin.reassign(task.id, world.agent2.id).principal_id == world.agent2.id
    assert agent2.orientation().my_attempts[0].task_id == task.id
    obs = actors.client("human").observe("src/answer.txt", "deployed", revision=1)
    assert obs.kind == "deployed" and actors.client("human").observations("src/answer.txt")
    assert admin.cancel(task.id, "no longer needed").status == "cancelled"
    kinds = [e.kind for e in admin.events(project=world.project_id, limit=1000)]
    assert "task.migrated" in kinds and "task.cancelled" in kinds


def test_admin_routes(actors: Actors, world: World) -> None:
    admin = actors.client("admin")
    assert [p.id for p in admin.projects()] == [world.project_id]
    assert {p.name for p in admin.principals(world.project_id)} >= {"agent-a", "ci"}
    assert admin.publish_policy("v2 rules", project=world.project_id).version == 2
    assert [p.version for p in admin.policies(world.project_id)] == [1, 2]
    assert [c.ref for c in admin.checkers(world.project_id)] == ["unit@1"]
    grants = admin.grants(world.project_id)
    assert all("token" not in g.model_dump() for g in grants)
    mine = actors.client("agent").grants()
    assert {g.principal_id for g in mine} == {world.agent.id}


def test_completion_receipt_verifies_against_jwks_and_metrics_count(actors: Actors, world: World) -> None:
    admin, agent, ver = actors.client("admin"), actors.client("agent"), actors.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"}, ("src/input.txt",))
    assert [v.candidate_id for v in ver.verifications()] == [cand.id]
    assert {e.path for e in ver.candidate_tree(cand.id).entries} >= {"src/answer.txt", "src/input.txt"}
    with pytest.raises(CompletionRejected) as missing:
        complete(agent, task, attempt, cand, [], request_id="first")
    assert missing.value.reason == "evidence_missing"
    receipt = verify(ver, world, cand)
    assert agent.receipt(receipt.id).body["result"] == "pass"
    done = complete(agent, task, attempt, cand, [receipt.id])
    key = admin.jwks()["keys"][0]
    assert verify_signature(key["x"], done.completion.receipt, done.completion.signature)
    assert done.completion.receipt["kid"] == key["kid"]
    text = admin.metrics()
    assert 'studiolo_completions_total{outcome="accepted",reason=""} 1.0' in text
    assert 'studiolo_completions_total{outcome="rejected",reason="evidence_missing"} 1.0' in text
    view = agent.task(task.id)
    assert view.task.fact == "accepted" and view.task.still_current is True
    assert view.rejections[0].data["failed"] == ["evidence_missing"]


def test_healthz_and_openapi(actors: Actors) -> None:
    with raw(actors) as http:
        assert http.get("/healthz").json()["status"] == "ok"
        doc = http.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path, ops in doc["paths"].items():
        for op in ops.values():
            for code, resp in op["responses"].items():
                if int(code) >= 400:
                    assert list(resp["content"]) == ["application/problem+json"], (path, code)
            # the limits' answers are in the document too: 503 everywhere, 429 on the stream
            assert "Retry-After" in op["responses"]["503"]["headers"], path
            assert ("429" in op["responses"]) == path.endswith("/events/stream"), path
