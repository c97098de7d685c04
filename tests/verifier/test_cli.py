"""`studiolo verifier keygen` and `studiolo verifier run --once` (embedded mode)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from typer.testing import CliRunner

from studiolo.core.model import ReceiptResult
from studiolo.verifier.cli import register
from studiolo.verifier.keyfile import KeyFileError, load_key_file
from tests.world import World


@pytest.fixture
def app() -> typer.Typer:
    main = typer.Typer()

    @main.callback()
    def _root() -> None:
        """studiolo"""

    register(main)
    return main


def test_keygen_writes_a_private_key_only_its_owner_reads(app: typer.Typer, tmp_path: Path) -> None:
    out = tmp_path / "verifier.key"
    result = CliRunner().invoke(app, ["verifier", "keygen", "--out", str(out)])
    assert result.exit_code == 0, result.output
    public = result.output.strip()
    assert len(public) == 43 and (out.stat().st_mode & 0o777) == 0o600
    from studiolo.keys import public_key_text

    assert public_key_text(load_key_file(out)) == public
    again = CliRunner().invoke(app, ["verifier", "keygen", "--out", str(out)])
    assert again.exit_code == 2 and "exists" in again.output
    assert CliRunner().invoke(app, ["verifier", "keygen", "--out", str(out), "--force"]).exit_code == 0
    assert public_key_text(load_key_file(out)) != public


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "k"
    out.write_bytes(b"")
    os.chmod(out, 0o644)
    with pytest.raises(KeyFileError, match="readable by others"):
        load_key_file(out)
    os.chmod(out, 0o600)
    with pytest.raises(KeyFileError, match="not an unencrypted PEM"):
        load_key_file(out)


def test_run_once_embedded(app: typer.Typer, world: World, tmp_path: Path) -> None:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    key = tmp_path / "ci.key"
    pem = world.verifier_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    key.write_bytes(pem)
    key.chmod(0o600)
    token = world.coord.rotate_token(world.admin, world.verifier.id).token
    args = ["verifier", "run", "--once", "--embedded", "--key", str(key)]
    env = {
        "STUDIOLO_DATABASE_URL": world.coord.store.url,
        "STUDIOLO_TOKEN": token,
        "STUDIOLO_CONFIG": "/nonexistent",
    }
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert f"pass    {cand.id} tests (unit@1)" in result.output
    assert "1 item(s) processed" in result.output
    assert [r.result for r in world.coord.receipts(world.agent, cand.id)] == [ReceiptResult.PASS]

    bad = CliRunner().invoke(app, args, env={**env, "STUDIOLO_TOKEN": "stl_wrong"})
    assert bad.exit_code == 2 and "unknown or revoked token" in bad.output


def test_the_docs_name_every_kind_and_option(app: typer.Typer) -> None:
    from typer.main import get_command

    from studiolo.verifier.checkers import registry

    docs = (Path(__file__).parents[2] / "docs" / "verifiers.md").read_text()
    for kind in registry():
        assert f"| `{kind}` |" in docs, kind
    group = get_command(app).commands["verifier"]  # type: ignore[attr-defined]
    for name, command in group.commands.items():
        assert f"studiolo verifier {name}" in docs, name
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--") and name == "run":
                    assert f"`{opt}`" in docs, opt
