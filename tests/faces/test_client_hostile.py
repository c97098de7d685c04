"""Finding: `studiolo checkout` wrote wherever the server said.

A hostile server (an `httpx.MockTransport`) lists artifacts with escaping paths, `.git`
paths, bytes that do not match their digest, or a path through a symlink the user already
has in the target. The checkout refuses each one, and nothing is written outside the target
(nor, for a refused listing, inside it).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner, Result

from studiolo.client import Client, is_git_segment
from studiolo.confined import UntrustedResponse, confined_path, write_confined
from studiolo.faces.cli import CliState, app
from studiolo.settings import ClientSettings

PROJECT = "prj_hostile0001"
GOOD = b"honest bytes\n"
EVIL = b"[core]\n\tfsmonitor = touch /tmp/pwned\n"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def hostile_server(listing: dict[str, bytes], *, lie_about: str | None = None) -> httpx.MockTransport:
    """Lists `listing` as artifacts; serves each blob (wrong bytes for `lie_about`)."""
    blobs = {_digest(data): (EVIL if path == lie_about else data) for path, data in listing.items()}

    def handle(request: httpx.Request) -> httpx.Response:
        url = request.url.path
        if url.endswith("/collections"):
            return httpx.Response(200, json={"project_id": PROJECT, "prefix": "", "revision": 7})
        if url.endswith("/artifacts"):
            rows = [
                {
                    "project_id": PROJECT,
                    "path": path,
                    "revision": 1,
                    "digest": _digest(data),
                    "deleted": False,
                    "updated_at": 0.0,
                }
                for path, data in listing.items()
            ]
            return httpx.Response(200, json=rows)
        if url.startswith("/v1/blobs/"):
            return httpx.Response(200, content=blobs[url.removeprefix("/v1/blobs/")])
        return httpx.Response(404, json={"reason": "not_found", "detail": url})

    return httpx.MockTransport(handle)


def checkout(transport: httpx.MockTransport, target: Path) -> Result:
    settings = ClientSettings(url="http://hostile.test", token="stl_x", project=PROJECT)
    return CliRunner().invoke(app, ["checkout", str(target)], obj=CliState(settings, transport))


@pytest.fixture
def sandbox(tmp_path: Path) -> Callable[[], list[str]]:
    """`tmp_path/target` is the checkout directory; returns every file written anywhere."""
    (tmp_path / "target").mkdir()

    def written() -> list[str]:
        return sorted(
            p.relative_to(tmp_path).as_posix()
            for p in tmp_path.rglob("*")
            if p.is_file() and not p.is_symlink()
        )

    return written


@pytest.mark.parametrize(
    "evil_path",
    ["../x", "/etc/x", "a/../../x", ".git/config", "sub/.GIT/hooks/x", "a\\..\\..\\x", "./x", "a//x"],
)
def test_checkout_writes_wherever_the_server_says_is_refused(
    tmp_path: Path, sandbox: Callable[[], list[str]], evil_path: str
) -> None:
    # `/etc/x` stands for an absolute path; one inside tmp_path, so a regression stays there
    evil_path = evil_path.replace("/etc/x", f"{tmp_path}/etc/x")
    transport = hostile_server({"ok.txt": GOOD, evil_path: EVIL})
    result = checkout(transport, tmp_path / "target")
    assert result.exit_code == 4, result.output
    assert "untrusted_response" in result.output
    assert sandbox() == []  # refused before anything was written, even the honest file


def test_checkout_refuses_a_blob_that_does_not_match_its_digest(
    tmp_path: Path, sandbox: Callable[[], list[str]]
) -> None:
    transport = hostile_server({"a.txt": GOOD, "b.txt": b"expected\n"}, lie_about="b.txt")
    result = checkout(transport, tmp_path / "target")
    assert result.exit_code == 4, result.output
    assert "do not match" in result.output
    assert "target/b.txt" not in sandbox()
    assert "target/.studiolo-checkout.json" not in sandbox()


@pytest.mark.parametrize("through", ["link/x", "link"])
def test_checkout_never_follows_a_symlink_already_in_the_target(
    tmp_path: Path, sandbox: Callable[[], list[str]], through: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_bytes(b"keep me\n")
    link_to = outside if through == "link/x" else outside / "x"
    (tmp_path / "target" / "link").symlink_to(link_to)
    result = checkout(hostile_server({through: EVIL}), tmp_path / "target")
    assert result.exit_code == 4, result.output
    assert (outside / "x").read_bytes() == b"keep me\n"
    assert sandbox() == ["outside/x"]


def test_checkout_manifest_is_not_written_through_a_symlink(
    tmp_path: Path, sandbox: Callable[[], list[str]]
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me\n")
    (tmp_path / "target" / ".studiolo-checkout.json").symlink_to(victim)
    result = checkout(hostile_server({"ok.txt": GOOD}), tmp_path / "target")
    assert result.exit_code == 4, result.output
    assert victim.read_bytes() == b"keep me\n"


def test_an_honest_checkout_still_writes_files_and_manifest(tmp_path: Path) -> None:
    target = tmp_path / "target"
    result = checkout(hostile_server({"src/app.py": GOOD, "README": b"hi\n"}), target)
    assert result.exit_code == 0, result.output
    assert (target / "src" / "app.py").read_bytes() == GOOD
    manifest = json.loads((target / ".studiolo-checkout.json").read_text())
    assert set(manifest["files"]) == {"src/app.py", "README"}
    assert sorted(os.listdir(target)) == [".studiolo-checkout.json", "README", "src"]  # no temp files


def test_get_blob_checks_the_digest() -> None:
    transport = hostile_server({"a": GOOD}, lie_about="a")
    with Client("http://hostile.test", "t", transport=transport) as c, pytest.raises(UntrustedResponse):
        c.get_blob(_digest(GOOD))


def test_write_confined_replaces_a_hard_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep me\n")
    (tmp_path / "target").mkdir()
    os.link(outside, tmp_path / "target" / "f")
    write_confined(tmp_path / "target", "f", b"new\n")
    assert outside.read_bytes() == b"keep me\n"
    assert (tmp_path / "target" / "f").read_bytes() == b"new\n"


@pytest.mark.parametrize(
    "segment", [".git", ".GIT", ".Git.", ".git ", ".git::$INDEX_ALLOCATION", "GIT~1", ".g\u200cit"]
)
def test_every_spelling_of_dot_git_is_a_git_segment(segment: str) -> None:
    assert is_git_segment(segment)
    with pytest.raises(UntrustedResponse):
        confined_path(f"a/{segment}/config")


@pytest.mark.parametrize("segment", [".github", "git", ".gitignore", "x.git"])
def test_near_misses_are_not_git_segments(segment: str) -> None:
    assert not is_git_segment(segment)
    assert confined_path(f"a/{segment}") == f"a/{segment}"


@pytest.mark.parametrize("link", ["src/key.pem", "src"])
def test_submit_never_uploads_what_a_workspace_symlink_points_to(tmp_path: Path, link: str) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.pem").write_bytes(b"PRIVATE\n")
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "ok.txt").write_bytes(GOOD)
    if link == "src":
        (work / "src" / "ok.txt").unlink()
        (work / "src").rmdir()
    (work / link).symlink_to(secret / "key.pem" if link.endswith(".pem") else secret)
    sent: list[bytes] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request.read())
        return httpx.Response(500, json={"reason": "internal_error", "detail": "unexpected"})

    settings = ClientSettings(url="http://hostile.test", token="stl_x", project=PROJECT)
    state = CliState(settings, httpx.MockTransport(record))
    result = CliRunner().invoke(app, ["submit", "att_0000000001", str(work)], obj=state)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output
    assert not any(b"PRIVATE" in body for body in sent)
