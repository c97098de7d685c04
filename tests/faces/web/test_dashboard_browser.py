"""The dashboard as a team lead, a reviewer and an operator use it (issue 36), in Debian's
Chromium at 1440×900 and 390×844, on one shared story (tests/faces/web/story.py) served on
a real socket. One browser and one server for the module; every page is checked for console
errors. axe-core (tests/faces/web/axe, `npm ci` there) finds no serious or critical
violation on any page at either size."""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from studiolo.faces.http.server import ServerThread
from studiolo.settings import Settings
from tests.faces.helpers import issue_tokens
from tests.faces.web.story import BIDI_REASON, LONG_TITLE, Story, tell
from tests.world import World, build_world

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
IMG = Path(__file__).resolve().parents[3] / "docs" / "img"
SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
WAIT_MS = 15_000

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium: `make test` installs it (apt-get install chromium)",
)
sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect


@dataclass
class Site:
    world: World
    story: Story
    url: str
    tokens: dict[str, str]

    @property
    def tasks(self) -> str:
        return f"{self.url}/ui/projects/{self.world.project_id}"


@dataclass
class Tab:
    """A signed-in page at one size, and the console errors it logged."""

    page: Any
    size: str
    errors: list[str] = field(default_factory=list)
    allowed: re.Pattern[str] | None = None  # console errors this test provokes on purpose


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    world = build_world(tmp_path_factory.mktemp("dashboard"))
    story = tell(world)
    with ServerThread(world.coord, Settings(database_url=world.coord.store.url)) as server:
        yield Site(world, story, server.url, issue_tokens(world))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _open(browser: Any, size: str, **options: Any) -> tuple[Any, Tab]:
    context = browser.new_context(viewport=SIZES[size], **options)
    tab = Tab(context.new_page(), size)
    tab.page.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
    tab.page.on("pageerror", lambda e: tab.errors.append(str(e)))
    return context, tab


def _sign_in(tab: Tab, site: Site, token: str) -> None:
    tab.page.get_by_label("Token").fill(token)
    tab.page.get_by_role("button", name="Sign in").click()


@pytest.fixture(params=list(SIZES))
def tab(request: pytest.FixtureRequest, browser: Any, site: Site) -> Iterator[Tab]:
    context, tab = _open(browser, request.param)
    tab.page.goto(f"{site.url}/ui/sign-in")
    _sign_in(tab, site, site.tokens["admin"])
    tab.page.wait_for_url(f"{site.url}/ui/")
    try:
        yield tab
        unexpected = [e for e in tab.errors if not (tab.allowed and tab.allowed.search(e))]
        assert not unexpected, f"console errors: {unexpected}"
    finally:
        context.close()


# the screenshots the README shows (tests/faces/test_docs.py: every one is linked)
SHOTS = {"tasks", "task", "task-blocked", "task-dark", "activity", "rules", "delegations", "study", "sign-in"}
SHOTS |= {"task-phone", "tasks-phone"}


def _shot(tab: Tab, name: str) -> None:
    stem = name if tab.size == "desktop" else f"{name}-phone"
    if os.environ.get("STUDIOLO_SCREENSHOTS") == "1" and stem in SHOTS:
        IMG.mkdir(parents=True, exist_ok=True)
        tab.page.screenshot(path=str(IMG / f"{stem}.png"), full_page=tab.size == "desktop")


def _fits(tab: Tab) -> None:
    """Nothing pushes the page wider than the screen (wide tables scroll inside their box)."""
    width = tab.page.evaluate("document.documentElement.scrollWidth")
    assert width <= SIZES[tab.size]["width"], f"the page is {width}px wide"


# 1. what needs attention, counts, search, totals, a live list ------------------------------
def test_the_task_list_shows_what_needs_attention(tab: Tab, site: Site) -> None:
    page, s = tab.page, site.story
    page.goto(site.tasks)
    total = site.world.coord.task_list_page(site.world.admin, site.world.project_id).tally.total
    expect(page.locator("#total")).to_have_text(str(total))
    expect(page.locator("#needs-attention")).to_have_text("4 need attention")
    for name in ("refused", "lease expired", "delegation indeterminate", "awaiting deployment"):
        expect(page.locator(f'.chip[data-attention="{name}"] strong')).to_have_text("1")
    expect(page.locator('.chip[data-fact="accepted"] strong')).to_have_text("2")
    expect(page.locator('.chip[data-fact="cancelled"] strong')).to_have_text("1")
    page.locator("#needs-attention").click()
    rows = page.locator("tbody tr[data-task]")
    expect(rows).to_have_count(4)
    listed = {rows.nth(i).get_attribute("data-task") for i in range(4)}
    assert listed == {s.refused, s.lapsed, s.delegated, s.awaiting}
    expect(page.locator(f'tr[data-task="{s.refused}"] .flag')).to_have_text("refused")
    _shot(tab, "tasks-attention")
    page.goto(site.tasks)
    page.get_by_role("searchbox", name="Search").fill("deploy")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(2)
    expect(page.locator("#total")).to_have_text("2")
    page.get_by_role("searchbox", name="Search").fill(s.lapsed)
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("rotate the signing key")
    expect(page.locator(f'tr[data-task="{s.lapsed}"] .flag')).to_have_text("lease expired")
    _fits(tab)


def test_the_task_list_is_live(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto(site.tasks + f"?q={tab.size}-live")
    page.evaluate("window.__notReloaded = true")
    expect(page.locator("#total")).to_have_text("0")
    task = site.world.new_task(f"a {tab.size}-live task")
    row = page.locator(f'tr[data-task="{task.id}"]')
    expect(row).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#total")).to_have_text("1")
    site.world.coord.claim(site.world.agent, task.id)
    expect(row.locator(".fact")).to_have_text("claimed", timeout=WAIT_MS)
    expect(row).to_contain_text("agent-a")
    site.world.coord.cancel_task(site.world.admin, task.id, "a test task")
    expect(row.locator(".fact")).to_have_text("cancelled", timeout=WAIT_MS)
    assert page.evaluate("window.__notReloaded") is True


# 2. the refusal at the top of a blocked task -------------------------------------------------
def test_a_blocked_task_says_why_at_the_top(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto(f"{site.url}/ui/tasks/{site.story.refused}")
    blocked = page.locator("#blocked")
    expect(blocked).to_contain_text("Blocked: the last completion was refused")
    expect(blocked).to_contain_text("dependency_stale: A file or collection the candidate read has changed")
    expect(blocked).to_contain_text("Recover: rebase on the current revisions")
    detail = blocked.locator('.detail[data-kind="dependency_stale"]')  # the refusal's recorded detail
    expect(detail).to_contain_text("src/input.txt changed from revision 1 to 2 by editor")
    top = page.evaluate("document.getElementById('blocked').getBoundingClientRect().top")
    first_card = page.evaluate(
        "document.querySelector('#live section:not(#blocked)').getBoundingClientRect().top"
    )
    assert top < first_card
    _shot(tab, "task-blocked")


# 3. names, not ids -----------------------------------------------------------------------------
def test_names_instead_of_ids(tab: Tab, site: Site) -> None:
    page, w = tab.page, site.world
    page.goto(f"{site.tasks}/delegations")
    queue = page.locator("#review")
    expect(queue).to_contain_text("attest")  # the task's title
    expect(queue).to_contain_text("delegated to acme")
    page.goto(f"{site.url}/ui/tasks/{site.story.accepted}")
    timeline = page.locator(".timeline")
    expect(timeline).to_contain_text("by agent-a")
    expect(timeline).not_to_contain_text("by prn_")
    page.goto(f"{site.tasks}/rules")
    pinned = page.get_by_role("link", name=re.compile(r"^\d+ tasks$"))
    count = int(pinned.inner_text().split()[0])
    pinned.click()
    expect(page.locator("#total")).to_have_text(str(count))
    assert "policy=1" in page.url and count >= 9
    assert w.project_id in page.url


# 4. delegation and deployment on the task page ------------------------------------------------
def test_delegation_and_deployment_on_the_task_page(tab: Tab, site: Site) -> None:
    page, s = tab.page, site.story
    page.goto(f"{site.url}/ui/tasks/{s.delegated}")
    delegation = page.locator("#delegation")
    expect(delegation).to_contain_text("indeterminate")
    delegation.get_by_role("link", name="review it").click()
    expect(page.locator("#review")).to_contain_text("attest")
    page.goto(f"{site.url}/ui/tasks/{s.awaiting}")
    expect(page.locator("#deployment")).to_contain_text("Waiting for a deployment")
    expect(page.locator('[data-attention="awaiting deployment"]')).to_be_visible()
    page.goto(f"{site.url}/ui/tasks/{s.deployed}")
    deployment = page.locator("#deployment")
    expect(deployment).to_contain_text("src/footer.txt@")
    expect(deployment).to_contain_text("observed deployed by editor")
    expect(deployment).to_contain_text("Every published revision was observed deployed")
    _shot(tab, "task-deployed")


# 5. actions only where they work, confirmed ----------------------------------------------------
def test_actions_only_where_they_work_and_confirmed(tab: Tab, site: Site) -> None:
    page, w = tab.page, site.world
    page.goto(f"{site.url}/ui/tasks/{site.story.accepted}")
    expect(page.locator("#no-actions")).to_contain_text("the task is completed")
    expect(page.get_by_role("button", name="Cancel task")).to_have_count(0)
    expect(page.get_by_role("button", name="Reassign")).to_have_count(0)
    task = w.new_task(f"cancel me on a {tab.size}")
    w.coord.claim(w.agent, task.id)
    page.goto(f"{site.url}/ui/tasks/{task.id}")
    expect(page.locator("#holder")).to_have_text("agent-a")
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.get_by_label("Reason for cancelling").fill("a duplicate")
    page.get_by_role("button", name="Cancel task").click()
    expect(page.locator("#status")).to_have_text("claimed")
    assert asked and "Cancel “cancel me" in asked[0]
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Cancel task").click()
    expect(page.locator("#status")).to_have_text("cancelled")
    expect(page.locator("#cancelled")).to_contain_text("Reason: a duplicate")
    expect(page.locator("#holder")).to_have_text("none")
    expect(page.locator(".countdown")).to_have_count(0)
    expect(page.locator("#no-actions")).to_be_visible()


def test_revoke_and_reject_ask_first(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto(f"{site.tasks}/rules")
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.get_by_role("button", name="Revoke read, verify grant of ci").click()
    assert asked and asked[0].startswith("Revoke the read, verify grant of ci?")
    expect(page.locator("#grants")).not_to_contain_text("revoked")
    page.goto(f"{site.tasks}/delegations")
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.locator("#review").get_by_role("button", name="Reject").click()
    assert len(asked) == 2 and asked[1].startswith("Reject the delegation of “attest”?")
    expect(page.locator("#review")).to_contain_text("attest")


# 6. long strings wrap, bidi controls are neutralized ------------------------------------------
def test_long_titles_wrap_and_bidi_controls_show(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto(f"{site.url}/ui/tasks/{site.story.long}")
    expect(page.get_by_role("heading", level=1)).to_have_text(LONG_TITLE)
    _fits(tab)
    page.goto(site.tasks + "?q=Refactor")
    expect(page.locator("tbody tr[data-task]")).to_have_count(1)
    _fits(tab)
    fact_right = page.evaluate("document.querySelector('tbody .fact').getBoundingClientRect().right")
    if tab.size == "desktop":
        assert fact_right < SIZES["desktop"]["width"], "the title pushed the fact off screen"
    page.goto(f"{site.url}/ui/tasks/{site.story.cancelled}")
    reason = page.locator("#cancelled q")
    expect(reason).to_have_text(BIDI_REASON.replace("\u202e", "[U+202E]").replace("\u202c", "[U+202C]"))
    assert "\u202e" not in page.content()


# 7. activity ---------------------------------------------------------------------------------
def test_activity_newest_first_live_filtered_paged_with_detail(tab: Tab, site: Site) -> None:
    page, w = tab.page, site.world
    page.goto(f"{site.tasks}/activity")
    seqs = page.locator("#events tr[data-seq]")
    first, second = (int(seqs.nth(i).get_attribute("data-seq")) for i in range(2))
    assert first > second
    w.coord.publish_policy(w.admin, w.project_id, f"Policy from the {tab.size} test.")
    expect(seqs.first).to_contain_text("policy.published", timeout=WAIT_MS)
    expect(seqs.first).to_have_class(re.compile(r"\bnew\b"))
    expect(page.locator("#new-events")).to_contain_text("1 new event")
    seqs.first.get_by_text("Detail").click()
    expect(seqs.first.locator("pre.data")).to_contain_text('"digest"')
    page.get_by_label("Kind").fill("completion.rejected")
    page.get_by_role("button", name="Filter").click()
    expect(seqs).to_have_count(1)
    expect(seqs.first).to_contain_text("completion.rejected")
    page.goto(f"{site.tasks}/activity")
    page.get_by_role("link", name="Older →").click()
    expect(seqs.first).to_be_visible()
    assert int(seqs.first.get_attribute("data-seq")) < first
    _fits(tab)


def test_projects_count_tasks_and_ordinals_are_whole(tab: Tab, site: Site) -> None:
    page = tab.page
    expect(page.locator(".project .counts")).to_contain_text(re.compile(r"\d+ tasks"))
    card = page.locator(".project").first
    assert card.evaluate("e => e.scrollWidth <= e.clientWidth")
    _shot(tab, "projects")
    page.goto(f"{site.url}/ui/tasks/{site.story.accepted}")
    item = page.locator(".timeline li").last
    box, list_box = item.bounding_box(), page.locator(".timeline").bounding_box()
    assert box and list_box and box["x"] >= list_box["x"]  # no marker hanging outside, clipped
    expect(item).to_contain_text(re.compile(r"^#\d+ "))


# 8. deep links, dark mode, a dropped connection, the receipt, phones ---------------------------
def test_a_deep_link_survives_signing_in(browser: Any, site: Site) -> None:
    context, tab = _open(browser, "phone")
    try:
        target = f"{site.url}/ui/tasks/{site.story.refused}"
        tab.page.goto(target)
        assert "/ui/sign-in?next=" in tab.page.url
        _sign_in(tab, site, site.tokens["admin"])
        tab.page.wait_for_url(target)
        expect(tab.page.locator("#blocked")).to_be_visible()
        tab.page.goto(f"{site.url}/ui/sign-in?next=//evil.test/")
        _sign_in(tab, site, site.tokens["admin"])
        tab.page.wait_for_url(f"{site.url}/ui/")
        assert not tab.errors
    finally:
        context.close()


def test_dark_mode_follows_the_system(browser: Any, site: Site) -> None:
    for size in SIZES:
        context, tab = _open(browser, size, color_scheme="dark")
        try:
            tab.page.goto(f"{site.url}/ui/sign-in")
            _sign_in(tab, site, site.tokens["admin"])
            tab.page.goto(f"{site.url}/ui/tasks/{site.story.refused}")
            background = tab.page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert _luminance(background) < 0.05, background
            _axe(tab, "task in dark mode")
            if size == "desktop":
                _shot(tab, "task-dark")
            assert not tab.errors
        finally:
            context.close()


def test_a_dropped_connection_is_shown(tab: Tab, site: Site) -> None:
    tab.allowed = re.compile(r"ERR_INTERNET_DISCONNECTED|Failed to fetch|Failed to load resource")
    page = tab.page
    page.goto(f"{site.url}/ui/tasks/{site.story.accepted}")
    expect(page.locator("#offline")).to_be_hidden()
    page.context.set_offline(True)
    expect(page.locator("#offline")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#offline")).to_contain_text("Connection to the server lost")
    page.context.set_offline(False)
    expect(page.locator("#offline")).to_be_hidden(timeout=WAIT_MS)


def test_the_receipt_shows_every_signed_field_and_the_published_candidate(tab: Tab, site: Site) -> None:
    page, w = tab.page, site.world
    view = w.coord.task_view(w.admin, site.story.accepted)
    assert view.completion is not None
    page.goto(f"{site.url}/ui/tasks/{site.story.accepted}")
    fields = page.locator(".receipt-fields dt")
    expect(fields).to_have_count(len(view.completion.receipt) + 1)  # and the signature
    for key in view.completion.receipt:
        expect(page.locator(".receipt-fields")).to_contain_text(key)
    published = page.locator(".candidate", has=page.locator(".published"))
    expect(published).to_have_count(1)
    expect(published.locator("h3")).to_contain_text(view.completion.candidate_id[:12])
    page.get_by_role("button", name="Verify signature").click()
    expect(page.locator(".verify-result")).to_contain_text("signature valid")
    _shot(tab, "task")


def test_phones_get_a_compact_header_and_scrolling_tables(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto(f"{site.url}/ui/tasks/{site.story.refused}")
    height = page.locator("header.top").bounding_box()["height"]
    assert height / SIZES[tab.size]["height"] < 0.13, f"the header takes {height}px"
    for box in page.locator(".scroll").all():
        assert box.get_attribute("tabindex") == "0" and box.get_attribute("role") == "region"
    _fits(tab)


# 9. accessibility ----------------------------------------------------------------------------
PAGES = {
    "projects": "/ui/",
    "tasks": "/ui/projects/{p}",
    "attention": "/ui/projects/{p}?attention=any",
    "blocked task": "/ui/tasks/{refused}",
    "accepted task": "/ui/tasks/{accepted}",
    "cancelled task": "/ui/tasks/{cancelled}",
    "delegated task": "/ui/tasks/{delegated}",
    "long task": "/ui/tasks/{long}",
    "activity": "/ui/projects/{p}/activity",
    "rules": "/ui/projects/{p}/rules",
    "delegations": "/ui/projects/{p}/delegations",
    "study": "/ui/study",
}


def _luminance(css: str) -> float:
    r, g, b = (int(x) / 255 for x in re.findall(r"\d+", css)[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@functools.cache
def _axe_source() -> str:
    return AXE.read_text(encoding="utf-8")


def _axe(tab: Tab, name: str) -> None:
    if not AXE.exists():
        pytest.skip("axe-core is not installed: (cd tests/faces/web/axe && npm ci)")
    if not tab.page.evaluate(
        "typeof axe !== 'undefined'"
    ):  # evaluated by the test, not the page: the CSP holds
        tab.page.evaluate(_axe_source())
    found = tab.page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))"
    )
    assert not found, f"{name} at {tab.size}: {json.dumps(found, indent=1)}"


def test_axe_finds_no_serious_violation_anywhere(tab: Tab, site: Site) -> None:
    s, ids = site.story, {"p": site.world.project_id}
    for name, path in PAGES.items():
        tab.page.goto(site.url + path.format(**ids, **vars(s)))
        _axe(tab, name)
        if name in ("tasks", "activity", "rules", "delegations", "study"):
            _shot(tab, name)
    tab.page.context.clear_cookies()
    tab.page.goto(f"{site.url}/ui/sign-in")
    _axe(tab, "sign-in")
    _shot(tab, "sign-in")


# the focused element's outline, and the first opaque background behind it
_RING = """() => { const e = document.activeElement; let b = e, bg = "rgba(0, 0, 0, 0)";
  while (b && (bg = getComputedStyle(b).backgroundColor) === "rgba(0, 0, 0, 0)") b = b.parentElement;
  const st = getComputedStyle(e); return [st.outlineColor, bg, st.outlineStyle, st.outlineWidth]; }"""


def test_the_focus_ring_stands_out_and_the_favicon_is_served(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto(site.tasks)
    for selector in ("main a", "#q", "header a"):
        page.focus(selector)
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")
        ring, behind, style, width = page.evaluate(_RING)
        assert style == "solid" and float(width.rstrip("px")) >= 2, f"{selector}: {style} {width}"
        assert _contrast(ring, behind) >= 3, f"{selector}: {ring} on {behind}"
    icon = httpx.get(f"{site.url}/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"
