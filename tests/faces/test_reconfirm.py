"""After a restore whose replaced ledger is gone: the operator reconfirms the service admin on
the ledger's host (`studiolo reconfirm`), the admin reconfirms the others over the API
(`studiolo principal reconfirm`, `POST /v1/principals/{id}/reconfirm`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from studiolo import Unauthenticated
from studiolo.client import Client
from studiolo.faces.cli import app
from studiolo.faces.http.app import create_app
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.store.backup import backup
from tests.faces.helpers import PortalTransport, issue_tokens
from tests.world import build_world


def test_the_operator_then_an_admin_reconfirm_what_a_restore_held(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    tokens = issue_tokens(world)
    file = tmp_path / "b.jsonl"
    backup(world.coord.store, file)
    world.coord.store.dispose()
    url = Settings.sqlite_url(tmp_path / "restored.db")  # the ledger the backup came from is gone
    runner = CliRunner()

    restored = runner.invoke(app, ["restore", str(file), "--database-url", url, "--yes"])
    assert restored.exit_code == 0, restored.output
    assert "held until reconfirmed" in restored.output and world.agent.id in restored.output
    listed = runner.invoke(app, ["reconfirm", "--database-url", url, "--json"])
    assert listed.exit_code == 0 and world.admin.id in listed.output, listed.output
    vouched = runner.invoke(app, ["reconfirm", world.admin.id, "--database-url", url])
    assert vouched.exit_code == 0 and "token(s)" in vouched.output, vouched.output

    coord = Coordinator(Store(url), Settings(database_url=url))
    transport = PortalTransport(create_app(coord, Settings(database_url=url)))
    clients = {n: Client("http://studiolo.test", t, transport=transport) for n, t in tokens.items()}
    try:
        with pytest.raises(Unauthenticated):
            clients["agent"].me()
        out = clients["admin"].reconfirm(world.agent.id)
        assert out.tokens and out.event_seq is not None
        assert clients["agent"].me().id == world.agent.id
        with pytest.raises(Unauthenticated):
            clients["human"].me()  # nobody vouched for it yet
        every = clients["admin"].events(project=world.project_id)
        events = [e for e in every if e.kind == "principal.reconfirmed"]
        assert [(e.subject, e.actor) for e in events] == [(world.agent.id, world.admin.id)]
    finally:
        for c in clients.values():
            c.close()
        transport.shutdown()
        coord.store.dispose()
