"""Issue 9: `GET /v1/blobs/{digest}` and the event page honour a path-scoped read grant."""

from __future__ import annotations

from tests.faces.helpers import Actors
from tests.faces.test_http_api import assert_problem, raw
from tests.world import World


def test_blob_route_honours_the_read_scope(actors: Actors, world: World) -> None:
    pid = world.project_id
    reader = world.coord.add_principal(world.admin, pid, "docs-reader", "human").principal
    world.coord.grant(world.admin, pid, reader.id, ["read"], ["docs/**"])
    token = world.coord.rotate_token(world.admin, reader.id).token
    world.edit("src/secret.py", b"API_KEY = 'hunter2'\n")
    secret = world.coord.read_artifact(world.admin, pid, "src/secret.py").artifact.digest
    assert secret
    with raw(actors, token) as http:
        assert_problem(http.get(f"/v1/blobs/{secret}"), 404, "blob_missing")
        assert_problem(http.get(f"/v1/projects/{pid}/artifacts/src/secret.py"), 403, "not_authorized")
        events = http.get(f"/v1/projects/{pid}/events").text
        assert secret not in events and "src/secret.py" not in events
    with raw(actors, actors.tokens["verifier"]) as http:
        assert http.get(f"/v1/blobs/{secret}").content == b"API_KEY = 'hunter2'\n"
