"""The dashboard in Debian's Chromium (headless, via Playwright) against a real uvicorn socket,
while agents work through the HTTP API in the same test. No browser is downloaded: the test
is skipped when /usr/bin/chromium is missing. With STUDIOLO_SCREENSHOTS=1 it also writes the
README's screenshots to docs/img/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from studiolo._exceptions import CompletionRejected
from studiolo.faces.http.server import ServerThread
from studiolo.settings import Settings
from tests.faces.helpers import Actors, complete, issue_tokens, new_task, submit, verify
from tests.world import World

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IMG = Path(__file__).resolve().parents[3] / "docs" / "img"
WAIT_MS = 15_000

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium: `make test` installs it (apt-get install chromium)",
)

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def live(world: World) -> Iterator[Actors]:
    with ServerThread(world.coord, Settings(database_url=world.coord.store.url)) as server:
        actors = Actors(world, issue_tokens(world), url=server.url)
        try:
            yield actors
        finally:
            actors.close()


@pytest.fixture
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _page(browser: object, url: str, token: str) -> object:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{url}/ui/sign-in")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{url}/ui/")
    return page


def _shot(page: object, name: str) -> None:
    if os.environ.get("STUDIOLO_SCREENSHOTS") == "1":
        IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMG / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def _fact(page: object, text: str) -> None:
    sync_api.expect(page.locator("#fact")).to_have_text(text, timeout=WAIT_MS)  # type: ignore[attr-defined]


def test_a_task_goes_from_claimed_to_accepted_live(live: Actors, browser: object) -> None:
    admin, agent, verifier, human = (live.client(n) for n in ("admin", "agent", "verifier", "human"))
    task = new_task(admin)
    page = _page(browser, live.url, live.tokens["admin"])
    expect = sync_api.expect
    page.goto(f"{live.url}/ui/tasks/{task.id}")  # type: ignore[attr-defined]
    page.evaluate("window.__notReloaded = true")  # type: ignore[attr-defined]
    _fact(page, "open")

    attempt = agent.claim(task.id)
    _fact(page, "claimed")
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    _fact(page, "candidate prepared")
    expect(page.locator(".diff .d-add")).to_have_text("+42")  # type: ignore[attr-defined]

    with pytest.raises(CompletionRejected):
        complete(agent, task, attempt, cand, [])
    refused = page.locator(".refused")  # type: ignore[attr-defined]
    expect(refused).to_contain_text("evidence_missing: A required criterion has no trusted", timeout=WAIT_MS)
    expect(refused).to_contain_text("Recover: wait for the verifier")

    receipt = verify(verifier, live.world, cand)
    _fact(page, "verified")
    complete(agent, task, attempt, cand, [receipt.id])
    _fact(page, "accepted")
    expect(page.locator("#still-current")).to_have_text("yes")  # type: ignore[attr-defined]
    page.get_by_role("button", name="Verify signature").click()  # type: ignore[attr-defined]
    expect(page.locator(".verify-result")).to_contain_text("signature valid")  # type: ignore[attr-defined]
    expect(page.locator(".timeline")).to_contain_text("completion.accepted")  # type: ignore[attr-defined]
    _shot(page, "task")

    human.edit_artifact("src/answer.txt", human.put_blob(b"43\n").digest, human.revision("src/answer.txt"))
    expect(page.locator("#still-current")).to_contain_text("no: a later edit", timeout=WAIT_MS)  # type: ignore[attr-defined]
    assert page.evaluate("window.__notReloaded") is True  # type: ignore[attr-defined]

    page.set_viewport_size({"width": 390, "height": 844})  # type: ignore[attr-defined]
    _shot(page, "task-phone")
    page.set_viewport_size({"width": 1280, "height": 900})  # type: ignore[attr-defined]
    busy = new_task(admin, "add a changelog entry")
    live.client("agent2").claim(busy.id)
    new_task(admin, "document the API")
    for name, path in (
        ("tasks", f"/ui/projects/{live.world.project_id}"),
        ("rules", f"/ui/projects/{live.world.project_id}/rules"),
        ("study", "/ui/study"),
    ):
        page.goto(live.url + path)  # type: ignore[attr-defined]
        _shot(page, name)
    page.goto(f"{live.url}/ui/projects/{live.world.project_id}/activity")  # type: ignore[attr-defined]
    expect(page.locator("#chain-status")).to_contain_text("Verified", timeout=WAIT_MS)  # type: ignore[attr-defined]
    admin.publish_policy("A later policy.")
    expect(page.locator("#events")).to_contain_text("policy.published", timeout=WAIT_MS)  # type: ignore[attr-defined]
    _shot(page, "activity")


def test_revoking_a_grant_from_the_page_refuses_the_next_completion(live: Actors, browser: object) -> None:
    admin, agent, verifier = (live.client(n) for n in ("admin", "agent", "verifier"))
    task = new_task(admin)
    attempt = agent.claim(task.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    receipt = verify(verifier, live.world, cand)

    page = _page(browser, live.url, live.tokens["admin"])
    page.goto(f"{live.url}/ui/projects/{live.world.project_id}/rules")  # type: ignore[attr-defined]
    page.get_by_role("button", name="Revoke claim, complete, write grant of agent-a").click()  # type: ignore[attr-defined]
    sync_api.expect(page.locator("#grants")).to_contain_text("revoked")  # type: ignore[attr-defined]

    with pytest.raises(CompletionRejected) as refused:
        complete(agent, task, attempt, cand, [receipt.id])
    assert refused.value.reason == "not_authorized"
    page.goto(f"{live.url}/ui/tasks/{task.id}")  # type: ignore[attr-defined]
    sync_api.expect(page.locator(".refused")).to_contain_text("not_authorized: The agent lacked a live")  # type: ignore[attr-defined]


def test_a_principal_of_another_project_sees_none_of_it(live: Actors, browser: object) -> None:
    admin = live.client("admin")
    task = new_task(admin)
    other = admin.create_project("elsewhere")
    outsider = admin.add_principal("outsider", "human", project=other.id)
    admin.grant(outsider.principal.id, ["read"], ["**"], project=other.id)
    page = _page(browser, live.url, outsider.token)
    body = page.locator("main")  # type: ignore[attr-defined]
    sync_api.expect(body).to_contain_text("elsewhere")
    sync_api.expect(body).not_to_contain_text("demo")
    for path in (f"/ui/tasks/{task.id}", f"/ui/projects/{live.world.project_id}/activity"):
        response = page.goto(live.url + path)  # type: ignore[attr-defined]
        assert response.status == 404
        sync_api.expect(body).not_to_contain_text("double the number")


def test_the_sign_in_page(live: Actors, browser: object) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    page.goto(f"{live.url}/ui/")
    assert page.url.endswith("/ui/sign-in")
    page.get_by_label("Token").fill("stl_not-a-token")
    page.get_by_role("button", name="Sign in").click()
    sync_api.expect(page.get_by_role("alert")).to_contain_text("unknown or revoked")
    _shot(page, "sign-in")
