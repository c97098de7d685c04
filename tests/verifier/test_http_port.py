"""`HttpPort`: the runner against the real HTTP face on a real socket (uvicorn in a thread),
through `studiolo.client.Client`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from typer.testing import CliRunner

from studiolo._exceptions import InvalidRequest, NotFound, StudioloError
from studiolo.core.model import ReceiptResult
from studiolo.faces.http.server import ServerThread
from studiolo.verifier.http import HttpPort
from tests.verifier.conftest import MakeRunner
from tests.world import World


def test_the_runner_over_a_real_socket(world: World, make_runner: MakeRunner) -> None:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    token = world.coord.rotate_token(world.admin, world.verifier.id).token
    with ServerThread(world.coord, world.coord.settings) as server:
        port = HttpPort.connect(server.url, token, world.project_id)
        try:
            [report] = make_runner(port=port).run_once()
            assert make_runner(port=port).run_once() == []
            with pytest.raises(NotFound) as missing:
                port.blob("sha256:" + "0" * 64)
            assert (missing.value.reason, missing.value.status) == ("blob_missing", 404)
            with pytest.raises(InvalidRequest) as bad:
                port.post_receipt(cand.id, {"result": "pass"}, "x")
            assert bad.value.status == 400
        finally:
            port.close()
    assert report.status == "pass", report.summary
    receipt = world.coord.receipt(world.agent, report.receipt_id or "")
    assert receipt.result is ReceiptResult.PASS and receipt.log_digest
    world.complete(task, attempt, cand, [receipt.id])


def test_a_non_json_error_still_raises(world: World) -> None:
    transport = httpx.MockTransport(lambda _r: httpx.Response(502, text="bad gateway"))
    port = HttpPort.connect("http://x", "stl_x", world.project_id, transport=transport)
    with pytest.raises(StudioloError) as exc:
        port.work()
    assert exc.value.status == 502


def test_the_main_cli_runs_a_verifier_over_http(world: World, tmp_path: Path) -> None:
    """`studiolo --url … verifier run --once`: the main CLI's settings reach the verifier."""
    from studiolo.faces.cli import build_app

    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    key = tmp_path / "ci.key"
    key.write_bytes(world.verifier_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    key.chmod(0o600)
    token = world.coord.rotate_token(world.admin, world.verifier.id).token
    env = {"STUDIOLO_CONFIG": str(tmp_path / "none.toml"), "STUDIOLO_TOKEN": token}
    with ServerThread(world.coord, world.coord.settings) as server:
        args = ["--url", server.url, "verifier", "run", "--once", "--key", str(key)]
        result = CliRunner().invoke(build_app(), args, env=env)
    assert result.exit_code == 0, result.output
    assert f"pass    {cand.id} tests (unit@1)" in result.output
    assert [r.result for r in world.coord.receipts(world.agent, cand.id)] == [ReceiptResult.PASS]
