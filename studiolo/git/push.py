"""The receive side of git's smart HTTP, for real (docs/git.md, "Writing through git").

A push never reaches the projection. Each receive-pack request runs git's own `git
http-backend` against a throwaway repository that borrows the projection's objects
(`objects/info/alternates`) and holds a copy of its branch ref, so the pusher sends only
what the projection lacks. git checks the pack (`receive.fsckObjects`: `.git` spellings,
`..`, malformed trees) and keeps it in its quarantine; then our `pre-receive` hook hands
the ref updates to the service over a Unix socket and prints the answer, which git sends
to the pusher on the sideband (`remote: ...`). The service's answer is the door's: a
candidate, a direct edit, or a refusal (the hook then exits 1 and git drops the
quarantine). Either way the throwaway repository is deleted with everything in it: the
projection's refs move only when the projector publishes what the ledger committed."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pygit2

from studiolo._exceptions import StudioloError
from studiolo.git.receive import Refused, Update, parse_updates
from studiolo.git.repository import BRANCH

__all__ = ["Handler", "quarantine"]

log = logging.getLogger(__name__)

Handler = Callable[[pygit2.Repository, list[Update], list[str]], str]
_MAX_REQUEST = 1 << 20

_HOOK = """#!{python} -I
import json, os, socket, sys
n = int(os.environ.get("GIT_PUSH_OPTION_COUNT") or 0)
request = {{
    "updates": sys.stdin.read(),
    "quarantine": os.environ.get("GIT_QUARANTINE_PATH", ""),
    "options": [os.environ.get("GIT_PUSH_OPTION_%d" % i, "") for i in range(min(n, 100))],
}}
s = socket.socket(socket.AF_UNIX)
s.connect({path!r})
s.sendall(json.dumps(request).encode())
s.shutdown(socket.SHUT_WR)
reply = b"".join(iter(lambda: s.recv(65536), b""))
answer = json.loads(reply) if reply else {{"code": 1, "message": "studiolo: the service did not answer\\n"}}
sys.stdout.write(answer["message"])
sys.exit(answer["code"])
"""


def _config(max_input: int, hooks: Path) -> str:
    return (
        "[receive]\n\tfsckObjects = true\n\tadvertisePushOptions = true\n\tdenyDeletes = true\n"
        f"\tmaxInputSize = {max_input}\n\tunpackLimit = 1000000\n"
        f"[http]\n\treceivepack = true\n[core]\n\thooksPath = {hooks}\n"
    )


@contextlib.contextmanager
def quarantine(projection: Path, handle: Handler, max_input: int) -> Iterator[Path]:
    """A throwaway repository named as the projection is, under a temporary root (yield:
    the `GIT_PROJECT_ROOT` for `git http-backend`), whose pre-receive hook asks `handle`."""
    with tempfile.TemporaryDirectory(prefix="studiolo-push-") as tmp:
        root = Path(tmp)
        repo = root / projection.name
        pygit2.init_repository(str(repo), bare=True, initial_head="main")
        (repo / "objects" / "info" / "alternates").write_text(str((projection / "objects").resolve()) + "\n")
        head = pygit2.Repository(str(projection)).references.get(BRANCH)
        if head is not None:
            (repo / "packed-refs").write_text(f"{head.target} {BRANCH}\n")
        hooks = root / "hooks"
        hooks.mkdir()
        address = str(root / "hook.sock")
        hook = hooks / "pre-receive"
        hook.write_text(_HOOK.format(python=sys.executable, path=address))
        hook.chmod(0o700)
        with (repo / "config").open("a") as config:
            config.write(_config(max_input, hooks))
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(address)
        listener.listen(1)
        listener.settimeout(0.1)
        stop = threading.Event()
        thread = threading.Thread(target=_answer, args=(listener, stop, repo, handle), daemon=True)
        thread.start()
        try:
            yield root
        finally:
            stop.set()
            thread.join()
            listener.close()


def _answer(listener: socket.socket, stop: threading.Event, repo: Path, handle: Handler) -> None:
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            conn.settimeout(None)
            code, message = _reply(conn, repo, handle)
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"code": code, "message": message}).encode())


def _reply(conn: socket.socket, repo: Path, handle: Handler) -> tuple[int, str]:
    chunks, size = [], 0
    while size <= _MAX_REQUEST:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    try:
        request = json.loads(b"".join(chunks))
        opened = pygit2.Repository(str(repo))
        held = Path(request["quarantine"]).resolve() if request["quarantine"] else None
        if held is not None:
            if not held.is_relative_to(repo.resolve()):
                raise Refused("the quarantine is not where git keeps it")
            opened.odb.add_disk_alternate(str(held))
        message = handle(opened, parse_updates(request["updates"]), list(request["options"]))
        return 0, message
    except Refused as exc:
        return 1, f"studiolo: refused: {exc}\n"
    except StudioloError as exc:
        refusal = json.dumps(exc.to_dict(), sort_keys=True)
        return 1, f"studiolo: refused ({exc.reason}): {exc.detail}\nstudiolo: {refusal}\n"
    except Exception:
        log.exception("inspecting a push failed")
        return 1, "studiolo: the service failed to inspect the push (see its log); nothing was applied\n"
