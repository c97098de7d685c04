"""Where a client finds the service (`ClientSettings`), apart from the server's `Settings`
(`studiolo.settings`, which re-exports it): a CLI call builds this one only."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["ClientSettings"]


@dataclass(frozen=True, kw_only=True)
class ClientSettings:
    """Where a client (the CLI) finds the service: flags > environment > config file.

    The config file is TOML (`url`, `token`, `project`), at `STUDIOLO_CONFIG` or
    `~/.config/studiolo/config.toml`. `state_dir` is where the CLI remembers the contract
    each attempt was claimed under (`STUDIOLO_STATE_DIR`, else `$XDG_STATE_HOME/studiolo`,
    else `~/.local/state/studiolo`); None remembers nothing.
    """

    url: str = "http://127.0.0.1:8765"
    token: str | None = None
    project: str | None = None
    config_path: Path | None = None
    state_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClientSettings:
        e = os.environ if env is None else env
        default = Path(e.get("HOME", "~")).expanduser() / ".config" / "studiolo" / "config.toml"
        path = Path(e["STUDIOLO_CONFIG"]) if e.get("STUDIOLO_CONFIG") else default
        file: dict[str, object] = {}
        if path.is_file():
            import tomllib  # only when there is a file to read: every CLI call builds settings

            with path.open("rb") as fh:
                file = tomllib.load(fh)

        def pick(env_key: str, file_key: str) -> str | None:
            value = e.get(env_key) or file.get(file_key)
            return str(value) if value else None

        return cls(
            url=pick("STUDIOLO_URL", "url") or cls.url,
            token=pick("STUDIOLO_TOKEN", "token"),
            project=pick("STUDIOLO_PROJECT", "project"),
            config_path=path if path.is_file() else None,
            state_dir=_state_dir(e),
        )

    def with_overrides(
        self, *, url: str | None = None, token: str | None = None, project: str | None = None
    ) -> ClientSettings:
        return replace(self, url=url or self.url, token=token or self.token, project=project or self.project)


def _state_dir(env: Mapping[str, str]) -> Path:
    if env.get("STUDIOLO_STATE_DIR"):
        return Path(env["STUDIOLO_STATE_DIR"])
    home = Path(env.get("HOME", "~")).expanduser()
    return Path(env.get("XDG_STATE_HOME") or home / ".local" / "state") / "studiolo"
