"""A refusal's structured details on the task page: rendered generically (each detail a
`kind` and fields) with a sentence for a changed path, names for principal ids, dates for
times; a refusal recorded without details shows its predicates alone. And the page's
small safety rules: bidi controls neutralized, the sign-in return path confined to /ui/."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment
from starlette.testclient import TestClient

from studiolo.core.model import Event
from studiolo.faces.web.errors import safe_next
from studiolo.faces.web.refusals import refusal
from studiolo.faces.web.templating import make_environment, neutral
from tests.faces.web.conftest import sign_in
from tests.world import World

AT = 1_760_000_000.0
NAMES = {"prn_editor0001": "editor"}


def _event(data: dict[str, Any]) -> Event:
    return Event(7, "prj_x", "completion.rejected", "prn_agent", "tsk_x", data, AT, "0" * 64, "1" * 64)


def _html(env: Environment, data: dict[str, Any]) -> str:
    macro = env.get_template("_refusal.html").module.show  # type: ignore[attr-defined]
    return str(macro(refusal(_event(data), NAMES), NAMES))


def test_a_stale_dependency_reads_as_a_sentence() -> None:
    detail = {
        "kind": "dependency_stale",
        "path": "src/input.txt",
        "from_revision": 1,
        "to_revision": 2,
        "by": "prn_editor0001",
        "at": AT + 60,
        "event": 42,
    }
    r = refusal(_event({"failed": ["dependency_stale"], "details": [detail]}), NAMES)
    (d,) = r.details
    assert d.sentence == "src/input.txt changed from revision 1 to 2 by editor at 2025-10-09 08:54:20 UTC"
    assert d.title == "Dependency stale" and ("event", "42") in d.fields and ("by", "editor") in d.fields
    assert r.reasons[0][0] == "dependency_stale" and r.reasons[0][2].startswith("rebase")


def test_any_detail_is_shown_field_by_field_and_escaped() -> None:
    env = make_environment()
    detail = {"kind": "grant_missing", "action": "complete", "revoked_at": AT, "note": "<script>x</script>"}
    html = _html(env, {"failed": ["not_authorized"], "details": [detail]})
    assert 'data-kind="grant_missing"' in html and "<strong>Grant missing</strong>" in html
    assert '<dt>revoked at</dt><dd class="long">2025-10-09 08:53:20 UTC</dd>' in html
    assert "&lt;script&gt;" in html and "<script>" not in html
    keyed = _html(
        env, {"failed": ["evidence_missing"], "details": {"evidence_missing": {"criterion": "tests"}}}
    )
    assert 'data-kind="evidence_missing"' in keyed and "<dt>criterion</dt>" in keyed


def test_a_refusal_without_details_shows_its_predicates() -> None:
    html = _html(make_environment(), {"failed": ["lease_expired"]})
    assert "<code>lease_expired</code>: The attempt&#39;s lease had run out" in html
    assert 'class="details"' not in html


def test_bidi_controls_are_shown_not_obeyed() -> None:
    assert neutral("a\u202eb\u2066c") == "a[U+202E]b[U+2066]c"
    env = make_environment()
    out = env.from_string("<h1>{{ t }}</h1><p title='{{ t }}'>{{ t|upper }}</p>").render(t="x\u202ey")
    assert "\u202e" not in out and out.count("[U+202E]") == 3


def test_the_return_path_after_sign_in_stays_on_the_dashboard() -> None:
    assert safe_next("/ui/tasks/tsk_1?x=1") == "/ui/tasks/tsk_1?x=1"
    for hostile in ("//evil.test/", "https://evil.test/ui/", "/ui//evil.test", "/ui/\\evil", "/api/x", ""):
        assert safe_next(hostile) == "/ui/"


def test_a_deep_link_is_kept_and_the_favicon_served(
    web: TestClient, world: World, tokens: dict[str, str]
) -> None:
    task = world.new_task()
    sent = web.get(f"/ui/tasks/{task.id}?tab=1", follow_redirects=False)
    assert (
        sent.status_code == 303
        and sent.headers["location"] == f"/ui/sign-in?next=%2Fui%2Ftasks%2F{task.id}%3Ftab%3D1"
    )
    form = web.get(sent.headers["location"]).text
    assert f'name="next" value="/ui/tasks/{task.id}?tab=1"' in form
    assert web.get("/favicon.ico").headers["content-type"] == "image/x-icon"
    sign_in(web, tokens["admin"])
    live = web.get(f"/ui/projects/{world.project_id}/tasks/live", params={"after": 10**9})
    assert live.status_code == 204  # nothing happened since: no list is computed
    assert "Tasks" in web.get(f"/ui/projects/{world.project_id}/tasks/live", params={"after": 0}).text


def test_the_cores_detail_shape_shows_its_sentence_and_nested_fields() -> None:
    detail = {
        "reason": "dependency_stale",
        "text": "src/input.txt changed from revision 1 to 2 by editor at 2026-12-04 14:47:00 UTC",
        "moved": [{"path": "src/input.txt", "from": 1, "to": 2, "by": "prn_editor0001"}],
        "items": [],
    }
    html = _html(make_environment(), {"failed": ["dependency_stale"], "details": [detail]})
    assert "<strong>Dependency stale</strong>: src/input.txt changed from revision 1 to 2 by editor" in html
    assert "<dt>moved</dt>" in html and "path src/input.txt, from 1, to 2, by editor" in html
    assert "<dt>items</dt>" not in html and "<dt>text</dt>" not in html
