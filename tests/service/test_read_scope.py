"""Issue 9: a path-scoped read grant scopes blob reads, events and listings too."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from studiolo import NotFound
from studiolo.core.model import Principal
from tests.world import World


def _reader(world: World) -> Principal:
    pid = world.project_id
    reader = world.coord.add_principal(world.admin, pid, "docs-reader", "human").principal
    world.coord.grant(world.admin, pid, reader.id, ["read"], ["docs/**"])
    return reader


def test_blob_reads_honour_the_read_scope(world: World) -> None:
    """Finding: `read` on docs/** got 403 for src/secret.py, but its bytes via the blob route."""
    reader = _reader(world)
    world.edit("src/secret.py", b"API_KEY = 'hunter2'\n")
    world.edit("docs/guide.md", b"# guide\n")
    secret = world.coord.read_artifact(world.admin, world.project_id, "src/secret.py").artifact.digest
    guide = world.coord.read_artifact(world.admin, world.project_id, "docs/guide.md").artifact.digest
    assert secret and guide
    with pytest.raises(NotFound):
        world.coord.get_blob(reader, secret)
    assert world.coord.get_blob(reader, guide) == b"# guide\n"
    assert world.coord.get_blob(world.verifier, secret) == b"API_KEY = 'hunter2'\n"  # reads **
    # the same bytes published under a readable path become readable there
    world.edit("docs/copy.txt", b"API_KEY = 'hunter2'\n")
    assert world.coord.get_blob(reader, secret) == b"API_KEY = 'hunter2'\n"


def test_events_and_listings_honour_the_read_scope(world: World) -> None:
    reader = _reader(world)
    pid = world.project_id
    world.edit("src/secret.py", b"API_KEY = 'hunter2'\n")
    world.edit("docs/guide.md", b"# guide\n")
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/secret.py": b"API_KEY = 'swordfish'\n", "docs/guide.md": b"# v2\n"})
    secret_digests = {
        world.coord.read_artifact(world.admin, pid, "src/secret.py").artifact.digest,
        cand.files["src/secret.py"],
    }
    events = world.coord.events(reader, pid, 0, 1000)
    assert [e.seq for e in events] == [e.seq for e in world.coord.events(world.admin, pid, 0, 1000)]
    text = json.dumps([asdict(e) for e in events], default=str)
    assert "src/secret.py" not in text and not any(str(d)[7:] in text for d in secret_digests)
    assert any(e.kind == "withheld" for e in events)
    assert any(e.kind == "artifact.edited" and e.subject == "docs/guide.md" for e in events)
    assert [a.path for a in world.coord.list_artifacts(reader, pid)] == ["docs/guide.md"]
    view = world.coord.task_view(reader, task.id)
    assert {p for c in view.candidates for p in c.files} == {"docs/guide.md"}
    assert set(world.coord.candidate(reader, cand.id).files) == {"docs/guide.md"}
    assert set(world.coord.candidate(world.agent, cand.id).files) == {"src/secret.py", "docs/guide.md"}


def test_dashboard_reads_honour_the_read_scope(world: World) -> None:
    reader = _reader(world)
    pid = world.project_id
    world.edit("src/secret.py", b"API_KEY = 'hunter2'\n")
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/secret.py": b"API_KEY = 'swordfish'\n"})
    page = world.coord.task_page(reader, task.id)
    text = json.dumps([asdict(e) for e in page.timeline], default=str)
    assert "src/secret.py" not in text and all(not c.files for c in page.view.candidates)
    latest = json.dumps([asdict(e) for e in world.coord.latest_events(reader, pid)], default=str)
    assert "src/secret.py" not in latest and str(cand.files["src/secret.py"]) not in latest
    listed = world.coord.task_list_page(reader, pid).views
    assert all(not c.files for v in listed for c in v.candidates)
