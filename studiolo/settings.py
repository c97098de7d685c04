"""Configuration as a value, built once from the environment and passed down."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Settings"]


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
        )

    @staticmethod
    def sqlite_url(path: Path) -> str:
        return f"sqlite:///{path}"
