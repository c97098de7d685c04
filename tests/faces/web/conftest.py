from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from studiolo.faces.http.app import create_app
from studiolo.settings import Settings
from tests.faces.helpers import issue_tokens
from tests.world import World

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found, "the page has no CSRF field"
    return found.group(1)


def sign_in(client: TestClient, token: str) -> str:
    """Sign in through the form; return the session's CSRF token (from the next page)."""
    page = client.get("/ui/sign-in")
    done = client.post(
        "/ui/sign-in", data={"csrf": csrf_of(page.text), "token": token}, follow_redirects=False
    )
    assert done.status_code == 303, done.text
    return csrf_of(client.get("/ui/").text)


@pytest.fixture
def tokens(world: World) -> dict[str, str]:
    return issue_tokens(world)


@pytest.fixture
def web(world: World) -> Iterator[TestClient]:
    app = create_app(world.coord, Settings(database_url=world.coord.store.url))
    with TestClient(app) as client:
        yield client
