"""Mirrors (docs/git.md, "Mirrors"): other remotes every publication is pushed to, kept as
remotes of the project's bare repository (`mirror-<8 hex>`), with what each holds and its
last error in the repository's config, so the lag is visible. A push is never forced: a
mirror that diverged is reported, not overwritten. A mirror that is down is retried with
backoff (1 s doubling to 60 s) and catches up."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from studiolo._exceptions import InvalidRequest
from studiolo.git.repository import BRANCH, CHECKPOINTS, NOTES, GitRepo

__all__ = ["Mirror", "Mirrors", "check_url"]

_PREFIX = "mirror-"
_REFSPECS = [f"{BRANCH}:{BRANCH}", f"{NOTES}:{NOTES}", f"{CHECKPOINTS}:{CHECKPOINTS}"]
_NETWORK = {"https", "http", "ssh", "git"}


@dataclass(frozen=True)
class Mirror:
    name: str
    url: str
    pushed: str | None  # the branch commit the mirror holds, as last pushed
    pushed_version: int
    error: str | None  # the last push's error (None: it succeeded)


def check_url(url: str, local_allowed: bool) -> str:
    """A mirror's URL: a network remote; a local path only for a service admin."""
    if not isinstance(url, str) or not url or len(url) > 1000 or any(ord(c) < 32 for c in url):
        raise InvalidRequest("a mirror URL is a URL of at most 1,000 characters")
    scheme = urlsplit(url).scheme
    if scheme in _NETWORK or (local_allowed and (scheme in ("", "file"))):
        return url
    raise InvalidRequest(
        f"a mirror is an {', '.join(sorted(_NETWORK))} URL (a local path: service admins only)"
    )


def _name(url: str) -> str:
    return _PREFIX + hashlib.sha256(url.encode()).hexdigest()[:8]


class Mirrors:
    """The mirrors of one repository, and the backoff of each (in this process)."""

    def __init__(self) -> None:
        self._backoff: dict[tuple[str, str], tuple[float, float]] = {}  # (repo, name) → (delay, next try)

    @staticmethod
    def add(repo: GitRepo, url: str) -> str:
        name = _name(url)
        if name not in {r.name for r in repo.repo.remotes}:
            repo.repo.remotes.create(name, url)
        return name

    @staticmethod
    def list(repo: GitRepo) -> list[Mirror]:
        config = repo.repo.config
        out = []
        for remote in repo.repo.remotes:
            if not str(remote.name).startswith(_PREFIX):
                continue
            pushed = _get(config, f"studiolo.{remote.name}.pushed")
            commit, _, version = (pushed or "").partition(" ")
            error = _get(config, f"studiolo.{remote.name}.error")
            out.append(
                Mirror(str(remote.name), str(remote.url), commit or None, int(version or 0), error or None)
            )
        return out

    def push(self, repo: GitRepo, now: float | None = None) -> None:
        """Push the branch, notes and checkpoints to every mirror that lags and is due."""
        now = time.monotonic() if now is None else now
        tip, version = repo.tip(BRANCH)
        if tip is None:
            return
        for mirror in self.list(repo):
            key = (str(repo.path), mirror.name)
            delay, due = self._backoff.get(key, (0.0, 0.0))
            if (mirror.pushed == str(tip) and mirror.error is None) or now < due:
                continue
            error = _push(repo, mirror.name)
            config = repo.repo.config
            if error is None:
                config[f"studiolo.{mirror.name}.pushed"] = f"{tip} {version}"
                config[f"studiolo.{mirror.name}.error"] = ""
                self._backoff.pop(key, None)
            else:
                config[f"studiolo.{mirror.name}.error"] = error[:500]
                delay = min(60.0, max(1.0, delay * 2))
                self._backoff[key] = (delay, now + delay)


def _get(config: object, key: str) -> str | None:
    try:
        return str(config[key])  # type: ignore[index]
    except KeyError:
        return None


def _push(repo: GitRepo, name: str) -> str | None:
    env = {**os.environ, "GIT_DIR": str(repo.path), "GIT_TERMINAL_PROMPT": "0"}
    refs = [r for r in _REFSPECS if repo.repo.references.get(r.split(":")[0]) is not None]
    try:
        done = subprocess.run(
            ["git", "push", "--quiet", name, *refs], capture_output=True, env=env, timeout=120
        )
    except subprocess.TimeoutExpired:
        return "the push timed out"
    return None if done.returncode == 0 else done.stderr.decode(errors="replace").strip() or "push failed"
