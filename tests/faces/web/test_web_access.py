"""The dashboard without a browser: sessions, CSRF, what each principal may see, and admin
actions going through the door (authorized and audited)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from studiolo._exceptions import CompletionRejected
from studiolo.core.reasons import Reason
from studiolo.faces.web.reasons import EXPLANATIONS
from tests.faces.web.conftest import csrf_of, sign_in
from tests.world import World

DOCS = Path(__file__).resolve().parents[3] / "docs" / "reasons.md"


def _accepted_task(world: World) -> str:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    world.complete(task, attempt, cand, [world.receipt(cand).id])
    return task.id


def test_sign_in_sets_a_strict_http_only_session_cookie(web: TestClient, tokens: dict[str, str]) -> None:
    assert web.get("/ui/", follow_redirects=False).headers["location"] == "/ui/sign-in"
    page = web.get("/ui/sign-in")
    done = web.post(
        "/ui/sign-in", data={"csrf": csrf_of(page.text), "token": tokens["human"]}, follow_redirects=False
    )
    cookie = done.headers["set-cookie"].lower()
    assert "studiolo_session=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
    assert "secure" not in cookie.split("studiolo_signin")[0]  # plain http here
    assert "Signed in as <strong>editor</strong>" in web.get("/ui/").text
    assert tokens["human"] not in web.get("/ui/").text


def test_the_cookie_is_secure_over_https(world: World, tokens: dict[str, str]) -> None:
    from studiolo.faces.http.app import create_app
    from studiolo.settings import Settings

    app = create_app(world.coord, Settings(database_url=world.coord.store.url))
    with TestClient(app, base_url="https://studiolo.test") as client:
        page = client.get("/ui/sign-in")
        data = {"csrf": csrf_of(page.text), "token": tokens["human"]}
        done = client.post("/ui/sign-in", data=data, follow_redirects=False)
        assert "secure" in done.headers["set-cookie"].split(",")[0].lower()


def test_a_wrong_token_is_refused(web: TestClient) -> None:
    page = web.get("/ui/sign-in")
    done = web.post("/ui/sign-in", data={"csrf": csrf_of(page.text), "token": "stl_nope"})
    assert done.status_code == 401 and "unknown or revoked" in done.text
    assert web.get("/ui/", follow_redirects=False).status_code == 303


def test_posts_without_the_csrf_token_are_refused(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    web.get("/ui/sign-in")
    assert web.post("/ui/sign-in", data={"token": tokens["admin"]}).status_code == 403
    assert web.post("/ui/sign-in", data={"csrf": "forged", "token": tokens["admin"]}).status_code == 403
    csrf = sign_in(web, tokens["admin"])
    grant = world.grants["agent"]
    for data in ({}, {"csrf": ""}, {"csrf": csrf[:-1] + "x"}):
        assert web.post(f"/ui/grants/{grant}/revoke", data=data).status_code == 403
    task = world.new_task()
    assert web.post(f"/ui/tasks/{task.id}/cancel", data={"reason": "x"}).status_code == 403
    assert all(g.live for g in world.coord.list_grants(world.admin, world.project_id))
    assert world.coord.task_view(world.admin, task.id).task.status.value == "open"


def test_admin_actions_go_through_the_door_and_are_audited(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    csrf = sign_in(web, tokens["admin"])
    before = world.coord.latest_events(world.admin, world.project_id, 1)[-1].seq
    grant = world.grants["agent"]
    done = web.post(f"/ui/grants/{grant}/revoke", data={"csrf": csrf}, follow_redirects=False)
    assert done.status_code == 303
    task = world.new_task()
    web.post(f"/ui/tasks/{task.id}/reassign", data={"csrf": csrf, "principal_id": world.agent2.id})
    web.post(f"/ui/projects/{world.project_id}/policies", data={"csrf": csrf, "text": "Be brief."})
    migrated = {"csrf": csrf, "criteria": "tests = unit@1", "scope": "src/**", "policy_version": "2"}
    assert web.post(f"/ui/tasks/{task.id}/migrate", data=migrated).status_code == 200
    web.post(f"/ui/tasks/{task.id}/cancel", data={"csrf": csrf, "reason": "obsolete"})
    expected = ["grant.revoked", "attempt.reassigned", "policy.published", "task.migrated", "task.cancelled"]
    events = world.coord.events(world.admin, world.project_id, before, 1000)
    kinds = [(e.kind, e.actor) for e in events if e.kind in expected]
    assert kinds == [(k, world.admin.id) for k in expected]
    view = world.coord.task_view(world.admin, task.id)
    assert view.task.contract.policy_version == 2 and view.task.contract.scope == ("src/**",)


def test_a_non_admin_is_refused_by_the_door(web: TestClient, world: World, tokens: dict[str, str]) -> None:
    csrf = sign_in(web, tokens["human"])
    task = world.new_task()
    refused = web.post(f"/ui/tasks/{task.id}/cancel", data={"csrf": csrf})
    assert refused.status_code == 403 and "admin grant" in refused.text
    assert web.post(f"/ui/grants/{world.grants['agent']}/revoke", data={"csrf": csrf}).status_code == 403
    assert world.coord.task_view(world.admin, task.id).task.status.value == "open"


def test_another_project_sees_none_of_it(web: TestClient, world: World) -> None:
    coord, admin = world.coord, world.admin
    task_id = _accepted_task(world)
    other = coord.create_project(admin, "elsewhere")
    outsider = coord.add_principal(admin, other.id, "outsider", "human")
    coord.grant(admin, other.id, outsider.principal.id, ["read", "admin"], ["**"])
    sign_in(web, outsider.token)
    listing = web.get("/ui/").text
    assert "elsewhere" in listing and "demo" not in listing and world.project_id not in listing
    for url in (
        f"/ui/projects/{world.project_id}",
        f"/ui/projects/{world.project_id}/activity",
        f"/ui/projects/{world.project_id}/activity/live",
        f"/ui/projects/{world.project_id}/rules",
        f"/ui/projects/{world.project_id}/chain",
        f"/ui/tasks/{task_id}",
        f"/ui/tasks/{task_id}/live",
    ):
        page = web.get(url)
        assert page.status_code == 404, url
        assert "double the number" not in page.text and "accepted" not in page.text
    csrf = csrf_of(web.get("/ui/").text)
    assert web.post(f"/ui/tasks/{task_id}/cancel", data={"csrf": csrf}).status_code == 404
    assert web.post(f"/ui/grants/{world.grants['agent']}/revoke", data={"csrf": csrf}).status_code == 404


def test_revoking_the_token_ends_the_session(web: TestClient, world: World, tokens: dict[str, str]) -> None:
    sign_in(web, tokens["human"])
    assert web.get("/ui/").status_code == 200
    world.coord.revoke_tokens(world.admin, world.human.id)
    assert web.get("/ui/", follow_redirects=False).headers["location"] == "/ui/sign-in"
    live = web.get(f"/ui/projects/{world.project_id}/activity/live", headers={"X-Studiolo-Fragment": "1"})
    assert live.status_code == 401


def test_the_task_page_shows_facts_refusals_and_still_current(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    with pytest.raises(CompletionRejected):
        world.complete(task, attempt, cand, [])
    sign_in(web, tokens["human"])
    page = web.get(f"/ui/tasks/{task.id}").text
    assert re.search(r'id="fact"[^>]*>candidate prepared<', page)
    assert "<code>evidence_missing</code>: A required criterion has no trusted, bound receipt." in page
    assert '<span class="d-del">-0</span>' in page and '<span class="d-add">+42</span>' in page
    world.complete(task, attempt, cand, [world.receipt(cand).id])
    page = web.get(f"/ui/tasks/{task.id}").text
    assert re.search(r'id="fact"[^>]*>accepted<', page) and '<span class="good">yes</span>' in page
    world.edit("src/answer.txt", b"43\n")
    page = web.get(f"/ui/tasks/{task.id}").text
    assert "no: a later edit replaced an accepted revision" in page


def test_the_task_list_filters_by_fact_and_status(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    done = _accepted_task(world)
    open_task = world.new_task("still open").id
    sign_in(web, tokens["human"])
    base = f"/ui/projects/{world.project_id}"
    accepted = web.get(base, params={"fact": "accepted"}).text
    assert done in accepted and open_task not in accepted
    opened = web.get(base, params={"status": "open"}).text
    assert open_task in opened and done not in opened
    assert web.get(base, params={"fact": "nonsense"}).status_code == 400


def test_every_reason_is_explained_with_the_documented_recovery() -> None:
    docs = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert set(EXPLANATIONS) == set(Reason)
    for reason, (what, hint) in EXPLANATIONS.items():
        section = docs.split(f"### `{reason.value}`", 1)[1].split("###", 1)[0]
        assert what and f"**Recover:** {hint}" in section, reason


def test_the_task_list_paginates(web: TestClient, world: World, tokens: dict[str, str]) -> None:
    from studiolo.faces.web.listing import PAGE_SIZE

    titles = [f"task number {i:03d}" for i in range(PAGE_SIZE + 3)]
    for title in titles:
        world.new_task(title)
    sign_in(web, tokens["human"])
    base = f"/ui/projects/{world.project_id}"
    first, second = web.get(base).text, web.get(base, params={"offset": PAGE_SIZE}).text
    on_first = {t for t in titles if t in first}
    on_second = {t for t in titles if t in second}
    assert len(on_first) == PAGE_SIZE and on_second == set(titles) - on_first  # same clock: any order
    assert f'offset={PAGE_SIZE}">Next' in first and "Next" not in second and "Previous" in second
    by_fact = web.get(base, params={"fact": "open", "offset": PAGE_SIZE}).text
    assert {t for t in titles if t in by_fact} == on_second and "Next" not in by_fact


def test_admin_forms_are_shown_only_to_principals_who_may_use_them(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    task_id = world.new_task().id
    pages = (f"/ui/tasks/{task_id}", f"/ui/projects/{world.project_id}/rules")
    forms = ("/reassign", "/cancel", "/migrate", "/policies", "/revoke", "Admin actions")
    sign_in(web, tokens["human"])  # reads everything, administers nothing
    for url in pages:
        page = web.get(url)
        assert page.status_code == 200, url
        assert not [f for f in forms if f in page.text], url
    web.cookies.clear()
    # a project admin (not the service admin) gets them
    issued = world.coord.add_principal(world.admin, world.project_id, "lead", "human")
    world.coord.grant(world.admin, world.project_id, issued.principal.id, ["read", "admin"], ["**"])
    sign_in(web, issued.token)
    task_page, rules_page = (web.get(url).text for url in pages)
    assert all(f in task_page for f in ("/reassign", "/cancel", "/migrate", "Admin actions"))
    assert all(f in rules_page for f in ("/policies", "/revoke"))


def test_the_live_task_page_follows_a_heartbeat(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    """A heartbeat is no audit event; the live fragment still re-renders when a lease moves."""
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id, 60)
    sign_in(web, tokens["human"])
    page = web.get(f"/ui/tasks/{task.id}").text
    after = re.search(r'data-after="(\d+)"', page)
    lease = re.search(r'data-lease="([^"]*)"', page)
    assert after and lease and attempt.id in lease.group(1)
    url, fragment = f"/ui/tasks/{task.id}/live", {"X-Studiolo-Fragment": "1"}
    params = {"after": after.group(1), "lease": lease.group(1).replace("&#39;", "'")}
    assert web.get(url, params=params, headers=fragment).status_code == 204
    world.coord.heartbeat(world.agent, attempt.id, 600)
    moved = web.get(url, params=params, headers=fragment)
    assert moved.status_code == 200 and 'data-lease="' in moved.text
    fresh = re.search(r'data-lease="([^"]*)"', moved.text)
    assert fresh and fresh.group(1) != lease.group(1)
    assert web.get(url, params={**params, "lease": fresh.group(1)}, headers=fragment).status_code == 204


def test_pages_may_not_be_framed(web: TestClient, tokens: dict[str, str]) -> None:
    """Issue 32 (Also): `X-Frame-Options: DENY` beside the CSP's `frame-ancestors 'none'`."""
    sign_in(web, tokens["human"])
    for page in (web.get("/ui/sign-in"), web.get("/ui/")):
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_signing_in_many_times_evicts_only_ones_own_sessions(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    """Issue 32 (Also): one principal signing in 10,000 times signed everyone out."""
    from studiolo.faces.web.session import Sessions

    sessions: Sessions = web.app.state.web_sessions  # type: ignore[attr-defined]
    victim = sessions.open(tokens["admin"], world.admin.id)
    mine = [sessions.open(tokens["human"], world.human.id) for _ in range(100)]
    assert sessions.get(victim.id) == victim
    assert [s for s in mine if sessions.get(s.id)] == mine[-16:]  # the oldest of its own went
    sessions.close(mine[-1].id)
    assert sessions.get(mine[-1].id) is None and sessions.get(mine[-2].id) == mine[-2]
