"""Authentication is cached (token hash → principal) and a revocation is still immediate:
once the revoking call has returned, no process sharing the ledger lets the token (or the
revoked grant) through — tested with real server processes on one SQLite ledger."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from studiolo._exceptions import Unauthenticated
from studiolo.faces.http.server import free_port
from tests.store.pgdb import fresh_database, server_url
from tests.world import World, build_world

STUDIOLO = [sys.executable, "-c", "from studiolo.faces.cli import main; main()"]


def test_a_revoked_token_fails_on_the_next_call_in_process(tmp_path: Path) -> None:
    w = build_world(tmp_path, clock=time.time)
    issued = w.coord.add_principal(w.admin, w.project_id, "cached", "agent")
    for _ in range(3):
        assert w.coord.authenticate(issued.token).id == issued.principal.id
    assert len(w.coord.auth_cache) >= 1
    w.coord.revoke_tokens(w.admin, issued.principal.id)
    with pytest.raises(Unauthenticated):
        w.coord.authenticate(issued.token)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_warmed_cache_answers_without_a_read_and_revocation_still_ends_it(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a server does before serving (`warm_auth_cache`): one read of every live token.
    A token revoked before is not let in; one revoked after is refused on the next call."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(fresh_database(server_url())) if backend == "postgresql" else None
        w = build_world(tmp_path, clock=time.time, url=url)
        stack.callback(w.coord.store.dispose)
        live = [w.coord.add_principal(w.admin, w.project_id, f"w{n}", "agent") for n in range(5)]
        gone = w.coord.add_principal(w.admin, w.project_id, "gone", "agent")
        w.coord.revoke_tokens(w.admin, gone.principal.id)
        door = type(w.coord)(type(w.coord.store)(w.coord.store.url), w.coord.settings)  # a fresh server
        stack.callback(door.store.dispose)
        assert door.warm_auth_cache() >= len(live) + 1  # the admin's token too
        with monkeypatch.context() as m:
            m.setattr(door.store, "read", _no_read)  # PostgreSQL reads one statement: the generation
            assert [door.authenticate(i.token).id for i in live] == [i.principal.id for i in live]
        assert [door.authenticate(i.token).id for i in live] == [i.principal.id for i in live]
        with pytest.raises(Unauthenticated):
            door.authenticate(gone.token)
        w.coord.revoke_tokens(w.admin, live[0].principal.id)
        with pytest.raises(Unauthenticated):
            door.authenticate(live[0].token)
        assert door.authenticate(live[1].token).id == live[1].principal.id


def _no_read(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("a warmed cache should answer without reading the ledger")


def test_a_second_coordinator_sees_a_revocation_at_once(tmp_path: Path) -> None:
    """Two doors on one ledger (two processes' worth of caches): each revocation made
    through one is refused by the other on its very next call."""
    w = build_world(tmp_path, clock=time.time)
    other = type(w.coord)(type(w.coord.store)(w.coord.store.url), w.coord.settings)
    for n in range(5):
        issued = w.coord.add_principal(w.admin, w.project_id, f"p{n}", "agent")
        assert other.authenticate(issued.token).id == issued.principal.id  # cached there now
        assert other.authenticate(issued.token).id == issued.principal.id
        rotated = w.coord.rotate_token(w.admin, issued.principal.id)
        with pytest.raises(Unauthenticated):
            other.authenticate(issued.token)
        assert other.authenticate(rotated.token).id == issued.principal.id
    other.store.dispose()


def test_the_auth_signal_moves_after_each_revoking_write_and_only_then(tmp_path: Path) -> None:
    w = build_world(tmp_path, clock=time.time)
    signal = w.coord.store.auth_signal
    assert signal is not None and Path(signal.path).name == "ledger.db.auth-signal"
    start = signal.value()
    assert start is not None
    issued = w.coord.add_principal(w.admin, w.project_id, "signalled", "agent")
    grant = w.coord.grant(w.admin, w.project_id, issued.principal.id, ["read"], ["**"])
    w.new_task("not a revocation")
    assert signal.value() == start  # writes that end no power leave it
    w.coord.revoke_grant(w.admin, grant.id)
    assert signal.value() == start + 1
    w.coord.rotate_token(w.admin, issued.principal.id)
    w.coord.revoke_tokens(w.admin, issued.principal.id)
    assert signal.value() == start + 3


def test_a_cached_token_is_answered_without_reading_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = build_world(tmp_path, clock=time.time)
    issued = w.coord.add_principal(w.admin, w.project_id, "cached", "agent")
    assert w.coord.authenticate_cached(issued.token) is None  # not known yet: read it
    assert w.coord.authenticate(issued.token).id == issued.principal.id

    def no_read(*_: object, **__: object) -> None:
        raise AssertionError("the ledger was read")

    with monkeypatch.context() as m:
        m.setattr(w.coord.store, "read", no_read)
        assert w.coord.authenticate(issued.token).id == issued.principal.id
        found = w.coord.authenticate_cached(issued.token)
        assert found is not None and found.id == issued.principal.id
    assert w.coord.authenticate_cached("stl_unknown") is None
    assert w.coord.authenticate_cached(None) is None


def test_a_revocation_by_another_process_is_refused_at_once_from_the_cache(tmp_path: Path) -> None:
    """The auth signal across processes: this process answers the token from its cache, on
    the event loop's path (`authenticate_cached`); another process revokes; once it has
    exited, the very next check here refuses the token, and so does `authenticate`."""
    w = build_world(tmp_path, clock=time.time)
    revoke = (
        "import sys; from studiolo.service import Coordinator; from studiolo.settings import Settings;"
        " from studiolo.store import Store; store = Store(sys.argv[1]);"
        " door = Coordinator(store, Settings(database_url=store.url));"
        " admin = door.authenticate(sys.argv[2]); door.revoke_tokens(admin, sys.argv[3])"
    )
    admin_token = w.coord.rotate_token(w.admin, w.admin.id).token
    for n in range(3):
        issued = w.coord.add_principal(w.admin, w.project_id, f"elsewhere{n}", "agent")
        assert w.coord.authenticate(issued.token).id == issued.principal.id
        assert w.coord.authenticate_cached(issued.token) is not None
        subprocess.run(
            [sys.executable, "-c", revoke, w.coord.store.url, admin_token, issued.principal.id],
            check=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert w.coord.authenticate_cached(issued.token) is None
        with pytest.raises(Unauthenticated):
            w.coord.authenticate(issued.token)
        assert w.coord.authenticate(admin_token).id == w.admin.id  # other tokens live on


def test_processes_reaching_the_ledger_by_other_paths_share_one_signal(tmp_path: Path) -> None:
    """A symlink to the ledger, or a relative path: the signal is beside the real file."""
    w = build_world(tmp_path, clock=time.time)
    (tmp_path / "link.db").symlink_to(tmp_path / "ledger.db")
    linked = type(w.coord.store)(f"sqlite:///{tmp_path / 'link.db'}")
    other = type(w.coord)(linked, w.coord.settings)
    assert linked.auth_signal is not None and w.coord.store.auth_signal is not None
    assert linked.auth_signal.path == w.coord.store.auth_signal.path
    issued = w.coord.add_principal(w.admin, w.project_id, "linked", "agent")
    assert other.authenticate(issued.token).id == issued.principal.id
    w.coord.revoke_tokens(w.admin, issued.principal.id)
    assert other.authenticate_cached(issued.token) is None
    with pytest.raises(Unauthenticated):
        other.authenticate(issued.token)
    linked.dispose()


@pytest.fixture
def two_servers(tmp_path: Path) -> Iterator[tuple[World, list[str]]]:
    w = build_world(tmp_path, clock=time.time)
    env = {**os.environ, "STUDIOLO_DATABASE_URL": w.coord.store.url}
    procs, urls = [], []
    try:
        for _ in range(2):
            port = free_port()
            procs.append(
                subprocess.Popen(
                    [*STUDIOLO, "serve", "--port", str(port)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            urls.append(f"http://127.0.0.1:{port}")
        for url, proc in zip(urls, procs, strict=True):
            _wait(url, proc)
        yield w, urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
        w.coord.store.dispose()


def test_revocations_reach_every_server_process_at_once(two_servers: tuple[World, list[str]]) -> None:
    w, (a, b) = two_servers
    admin_token = w.coord.rotate_token(w.admin, w.admin.id).token
    task = w.new_task("seen by the agent")
    for n in range(4):
        issued = w.coord.add_principal(w.admin, w.project_id, f"remote{n}", "agent")
        grant = w.coord.grant(w.admin, w.project_id, issued.principal.id, ["read"], ["**"])
        agent = {"Authorization": f"Bearer {issued.token}"}
        admin = {"Authorization": f"Bearer {admin_token}"}
        for url in (a, b, a, b):  # both processes have the token (and its principal) cached
            assert httpx.get(f"{url}/v1/tasks/{task.id}", headers=agent).status_code == 200
        # a grant revoked through one process: the other refuses the read at once
        revoked = httpx.post(f"{a}/v1/grants/{grant.id}/revoke", headers=admin)
        assert revoked.status_code == 200, revoked.text
        assert httpx.get(f"{b}/v1/tasks/{task.id}", headers=agent).status_code == 404
        assert httpx.get(f"{b}/v1/me", headers=agent).status_code == 200  # the token itself lives
        # the token revoked through one process: the other answers 401 on the next request
        gone = httpx.post(f"{a}/v1/principals/{issued.principal.id}/tokens/revoke", headers=admin)
        assert gone.status_code == 200, gone.text
        assert httpx.get(f"{b}/v1/me", headers=agent).status_code == 401
        assert httpx.post(f"{b}/v1/tasks/{task.id}/attempts", headers=agent, json={}).status_code == 401
        assert httpx.get(f"{a}/v1/me", headers=agent).status_code == 401


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server did not start")
