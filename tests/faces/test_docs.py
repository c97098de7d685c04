"""Docs that tests keep true: docs/api.md's curl examples run against a live server, its
route table covers the OpenAPI document, and docs/cli.md is exactly what the CLI generates."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from studiolo.faces.cli import app
from studiolo.faces.cli.docs import render
from studiolo.faces.http.app import create_app
from studiolo.settings import Settings
from tests.faces.helpers import Actors, new_task
from tests.world import World

DOCS = Path(__file__).resolve().parents[2] / "docs"
SPEC_ROUTES = {
    "POST /v1/projects",
    "POST /v1/projects/{project_id}/principals",
    "POST /v1/projects/{project_id}/grants",
    "POST /v1/grants/{grant_id}/revoke",
    "POST /v1/projects/{project_id}/policies",
    "POST /v1/projects/{project_id}/checkers",
    "POST /v1/blobs",
    "GET /v1/blobs/{digest}",
    "GET /v1/projects/{project_id}/artifacts/{path}",
    "PUT /v1/projects/{project_id}/artifacts/{path}",
    "POST /v1/projects/{project_id}/tasks",
    "GET /v1/projects/{project_id}/tasks",
    "GET /v1/tasks/{task_id}",
    "POST /v1/tasks/{task_id}/cancel",
    "POST /v1/tasks/{task_id}/migrate",
    "POST /v1/tasks/{task_id}/attempts",
    "POST /v1/tasks/{task_id}/reassign",
    "POST /v1/attempts/{attempt_id}/heartbeat",
    "POST /v1/attempts/{attempt_id}/release",
    "POST /v1/attempts/{attempt_id}/candidates",
    "POST /v1/candidates/{candidate_id}/receipts",
    "GET /v1/verifications",
    "POST /v1/tasks/{task_id}/complete",
    "POST /v1/attempts/{attempt_id}/handoff",
    "GET /v1/tasks/{task_id}/handoff",
    "POST /v1/projects/{project_id}/observations",
    "GET /v1/projects/{project_id}/events",
    "GET /.well-known/jwks.json",
    "GET /healthz",
    "GET /metrics",
}


def _operations(world: World) -> set[str]:
    doc = TestClient(create_app(world.coord, Settings())).get("/openapi.json").json()  # not started
    return {f"{m.upper()} {p}" for p, ops in doc["paths"].items() for m in ops}


def test_every_spec_route_exists_and_every_extra_is_documented(world: World) -> None:
    ops = _operations(world)
    assert ops >= SPEC_ROUTES
    text = (DOCS / "api.md").read_text()
    table = text[text.index("## Routes, and where") :]
    for op in sorted(ops - SPEC_ROUTES):
        path = op.split(" ", 1)[1].replace("{principal_id}", "{id}")
        path = re.sub(r"\{(\w)\w*_id\}", r"{\1}", path)
        assert path in table, f"{op} is not explained in docs/api.md"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the examples use curl")
def test_the_curl_examples_run(live: Actors) -> None:
    task = new_task(live.client("admin"), "documented")
    env = {
        **os.environ,
        "STUDIOLO_URL": live.url,
        "ADMIN_TOKEN": live.tokens["admin"],
        "AGENT_TOKEN": live.tokens["agent"],
        "PROJECT": live.world.project_id,
        "TASK": task.id,
    }
    blocks = re.findall(r"```sh\n(.*?)```", (DOCS / "api.md").read_text(), re.S)
    assert len(blocks) >= 6
    for block in blocks:
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block], env=env, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, (block, run.stdout, run.stderr)
    assert live.client("agent").task(task.id).task.fact == "candidate prepared"


def test_cli_docs_are_generated_from_help() -> None:
    assert (DOCS / "cli.md").read_text() == render(app), (
        "run: python -m studiolo.faces.cli.docs > docs/cli.md"
    )


def test_the_readme_shows_every_dashboard_screenshot() -> None:
    readme = (DOCS.parent / "README.md").read_text()
    shots = sorted(p.name for p in (DOCS / "img").glob("*.png"))
    assert shots, "the browser tests write docs/img/*.png"
    for name in shots:
        assert f"](docs/img/{name})" in readme, f"README.md does not show or link docs/img/{name}"
