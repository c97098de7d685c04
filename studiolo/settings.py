"""Configuration as a value, built once from the environment and passed down."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["ClientSettings", "Settings"]


@dataclass(frozen=True)
class Settings:
    database_url: str = "sqlite:///studiolo.db"
    max_blob_bytes: int = 8 * 1024 * 1024
    max_request_bytes: int = 16 * 1024 * 1024
    default_lease_seconds: float = 600.0
    max_lease_seconds: float = 24 * 3600.0
    max_files_per_candidate: int = 1000
    host: str = "127.0.0.1"
    port: int = 8765
    public_url: str = ""
    # HTTP hardening (docs/operations.md, "Limits"): timeouts, caps, in-flight requests.
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 60.0
    max_connections_per_address: int = 128
    max_in_flight_requests: int = 256
    max_json_bytes: int = 1024 * 1024
    max_candidate_bytes: int = 4 * 1024 * 1024
    max_completion_bytes: int = 64 * 1024
    max_streams_per_principal: int = 8

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env
        base = cls()
        port = int(e.get("STUDIOLO_PORT", base.port))
        host = e.get("STUDIOLO_HOST", base.host)
        return cls(
            database_url=e.get("STUDIOLO_DATABASE_URL", base.database_url),
            max_blob_bytes=int(e.get("STUDIOLO_MAX_BLOB_BYTES", base.max_blob_bytes)),
            max_request_bytes=int(e.get("STUDIOLO_MAX_REQUEST_BYTES", base.max_request_bytes)),
            default_lease_seconds=float(e.get("STUDIOLO_LEASE_SECONDS", base.default_lease_seconds)),
            host=host,
            port=port,
            public_url=e.get("STUDIOLO_PUBLIC_URL", f"http://{host}:{port}"),
            header_timeout_seconds=float(e.get("STUDIOLO_HEADER_TIMEOUT", base.header_timeout_seconds)),
            body_timeout_seconds=float(e.get("STUDIOLO_BODY_TIMEOUT", base.body_timeout_seconds)),
            max_connections_per_address=int(
                e.get("STUDIOLO_MAX_CONNECTIONS_PER_ADDRESS", base.max_connections_per_address)
            ),
            max_in_flight_requests=int(e.get("STUDIOLO_MAX_IN_FLIGHT", base.max_in_flight_requests)),
            max_json_bytes=int(e.get("STUDIOLO_MAX_JSON_BYTES", base.max_json_bytes)),
            max_candidate_bytes=int(e.get("STUDIOLO_MAX_CANDIDATE_BYTES", base.max_candidate_bytes)),
            max_completion_bytes=int(e.get("STUDIOLO_MAX_COMPLETION_BYTES", base.max_completion_bytes)),
            max_streams_per_principal=int(e.get("STUDIOLO_MAX_STREAMS", base.max_streams_per_principal)),
        )

    @staticmethod
    def sqlite_url(path: Path) -> str:
        return f"sqlite:///{path}"


@dataclass(frozen=True)
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
        import tomllib

        e = os.environ if env is None else env
        default = Path(e.get("HOME", "~")).expanduser() / ".config" / "studiolo" / "config.toml"
        path = Path(e["STUDIOLO_CONFIG"]) if e.get("STUDIOLO_CONFIG") else default
        file: dict[str, object] = {}
        if path.is_file():
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
