"""Configuration as a value, built once from the environment and passed down."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from studiolo.client_settings import ClientSettings

__all__ = ["ClientSettings", "Settings"]


@dataclass(frozen=True, kw_only=True)
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
    # /mcp answers only these Host and Origin values, besides those of `public_url` and loopback
    mcp_allowed_hosts: tuple[str, ...] = ()
    mcp_allowed_origins: tuple[str, ...] = ()
    # HTTP hardening (docs/operations.md, "Limits"): timeouts, caps, in-flight requests.
    header_timeout_seconds: float = 10.0
    keep_alive_seconds: float = 30.0  # idle between requests; agents heartbeat every ~10 s
    body_timeout_seconds: float = 60.0
    max_connections_per_address: int = 128
    max_in_flight_requests: int = 256
    max_queued_requests: int = 1024  # over `max_in_flight_requests`, this many wait for a slot
    queue_wait_seconds: float = 2.0  # ... this long at most, then 503 `overloaded`
    heartbeat_window_seconds: float = 0.02  # heartbeats under load are written together, per window
    max_json_bytes: int = 1024 * 1024
    max_candidate_bytes: int = 4 * 1024 * 1024
    max_completion_bytes: int = 64 * 1024
    max_streams_per_principal: int = 8
    # Reverse proxies (CIDRs) whose X-Forwarded-For / Forwarded name the client that the
    # per-address connection limit counts (docs/operations.md). None by default.
    trusted_proxies: tuple[str, ...] = ()
    # PostgreSQL connections a serving process keeps (and never more: see docs/operations.md)
    db_pool_size: int = 10
    # The A2A requester (docs/a2a.md, "Delegating to a remote agent").
    a2a_requester: bool = True  # drive delegations to remote agents in this process
    a2a_poll_seconds: float = 2.0
    a2a_quiescence_bound: float = 600.0
    a2a_backoff_initial: float = 1.0
    a2a_backoff_max: float = 60.0
    a2a_confirm_seconds: float = 2.0  # least time between the two reads that must agree
    a2a_max_artifact_bytes: int = 64 * 1024 * 1024
    a2a_request_timeout: float = 30.0
    a2a_max_response_bytes: int = 32 * 1024 * 1024  # a card or GetTask answer (inline artifacts)
    a2a_credentials: Mapping[str, str] = field(default_factory=dict)  # org name → bearer token
    # The git projection (docs/git.md): "" puts the repositories next to a SQLite ledger
    # (`<ledger>-git/`) and turns the projection off for PostgreSQL; "off" turns it off.
    git_dir: str = ""
    git_interval_seconds: float = 0.5  # the projector's timer (it also replays at start)
    git_checkpoint_seconds: float = 60.0  # a signed checkpoint of the chain head at least this often
    # Evidence retention (docs/operations.md, "Retention and deletion"): how often `serve`
    # sweeps every project's expired evidence (0: never; `studiolo admin retention sweep` still does)
    retention_sweep_seconds: float = 3600.0
    # Operating it (docs/operations.md, "Metrics, logs and traces")
    metrics: bool = True  # count and time requests, completions, groups, retries (`GET /metrics`)
    metrics_dir: str = ""  # the workers' shared metric files (`serve` makes a temporary one)
    log_format: str = "off"  # "json": a line per request and per state change on stderr (from_env's default)
    tracing: bool = False  # OpenTelemetry spans to the global tracer provider (the `otel` extra)

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
            mcp_allowed_hosts=_words(e.get("STUDIOLO_MCP_ALLOWED_HOSTS", "")),
            mcp_allowed_origins=_words(e.get("STUDIOLO_MCP_ALLOWED_ORIGINS", "")),
            header_timeout_seconds=float(e.get("STUDIOLO_HEADER_TIMEOUT", base.header_timeout_seconds)),
            body_timeout_seconds=float(e.get("STUDIOLO_BODY_TIMEOUT", base.body_timeout_seconds)),
            keep_alive_seconds=float(e.get("STUDIOLO_KEEP_ALIVE", base.keep_alive_seconds)),
            max_connections_per_address=int(
                e.get("STUDIOLO_MAX_CONNECTIONS_PER_ADDRESS", base.max_connections_per_address)
            ),
            max_in_flight_requests=int(e.get("STUDIOLO_MAX_IN_FLIGHT", base.max_in_flight_requests)),
            max_queued_requests=int(e.get("STUDIOLO_MAX_QUEUED", base.max_queued_requests)),
            queue_wait_seconds=float(e.get("STUDIOLO_QUEUE_WAIT", base.queue_wait_seconds)),
            heartbeat_window_seconds=float(e.get("STUDIOLO_HEARTBEAT_WINDOW", base.heartbeat_window_seconds)),
            max_json_bytes=int(e.get("STUDIOLO_MAX_JSON_BYTES", base.max_json_bytes)),
            max_candidate_bytes=int(e.get("STUDIOLO_MAX_CANDIDATE_BYTES", base.max_candidate_bytes)),
            max_completion_bytes=int(e.get("STUDIOLO_MAX_COMPLETION_BYTES", base.max_completion_bytes)),
            max_streams_per_principal=int(e.get("STUDIOLO_MAX_STREAMS", base.max_streams_per_principal)),
            trusted_proxies=_cidrs(e.get("STUDIOLO_TRUSTED_PROXIES", "")),
            db_pool_size=int(e.get("STUDIOLO_DB_POOL_SIZE", base.db_pool_size)),
            a2a_requester=e.get("STUDIOLO_A2A_REQUESTER", "1") not in ("0", "false", "no"),
            a2a_poll_seconds=float(e.get("STUDIOLO_A2A_POLL_SECONDS", base.a2a_poll_seconds)),
            a2a_quiescence_bound=float(e.get("STUDIOLO_A2A_QUIESCENCE_BOUND", base.a2a_quiescence_bound)),
            a2a_backoff_initial=float(e.get("STUDIOLO_A2A_BACKOFF_INITIAL", base.a2a_backoff_initial)),
            a2a_backoff_max=float(e.get("STUDIOLO_A2A_BACKOFF_MAX", base.a2a_backoff_max)),
            a2a_confirm_seconds=float(e.get("STUDIOLO_A2A_CONFIRM_SECONDS", base.a2a_confirm_seconds)),
            a2a_max_artifact_bytes=int(e.get("STUDIOLO_A2A_MAX_ARTIFACT_BYTES", base.a2a_max_artifact_bytes)),
            a2a_request_timeout=float(e.get("STUDIOLO_A2A_REQUEST_TIMEOUT", base.a2a_request_timeout)),
            a2a_max_response_bytes=int(e.get("STUDIOLO_A2A_MAX_RESPONSE_BYTES", base.a2a_max_response_bytes)),
            a2a_credentials=_credentials(e.get("STUDIOLO_A2A_CREDENTIALS")),
            git_dir=e.get("STUDIOLO_GIT_DIR", base.git_dir),
            git_interval_seconds=float(e.get("STUDIOLO_GIT_INTERVAL", base.git_interval_seconds)),
            git_checkpoint_seconds=float(e.get("STUDIOLO_GIT_CHECKPOINT", base.git_checkpoint_seconds)),
            retention_sweep_seconds=float(
                e.get("STUDIOLO_RETENTION_SWEEP_SECONDS", base.retention_sweep_seconds)
            ),
            metrics=e.get("STUDIOLO_METRICS", "1") not in ("0", "false", "no"),
            metrics_dir=e.get("STUDIOLO_METRICS_DIR", base.metrics_dir),
            log_format=e.get("STUDIOLO_LOG", "json"),
            tracing=e.get("STUDIOLO_TRACING", "0") not in ("0", "false", "no", ""),
        )

    @staticmethod
    def sqlite_url(path: Path) -> str:
        return f"sqlite:///{path}"

    def git_root(self) -> Path | None:
        """Where the project repositories live; None: no git projection."""
        if self.git_dir == "off":
            return None
        if self.git_dir:
            return Path(self.git_dir)
        prefix = "sqlite:///"
        if not self.database_url.startswith(prefix) or ":memory:" in self.database_url:
            return None
        ledger = Path(self.database_url.removeprefix(prefix))
        return ledger.with_name(ledger.stem + "-git")


def _words(value: str) -> tuple[str, ...]:
    """A comma-separated list."""
    return tuple(w.strip() for w in value.split(",") if w.strip())


def _credentials(path: str | None) -> dict[str, str]:
    """Bearer tokens for remote agents, by organisation name: a JSON file kept out of the ledger."""
    if not path:
        return {}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ValueError("STUDIOLO_A2A_CREDENTIALS names a JSON object of organisation → token")
    return dict(data)


def _cidrs(text: str) -> tuple[str, ...]:
    """Comma- or space-separated CIDRs, each checked (a typo fails at start, not silently)."""
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        return ()
    import ipaddress  # only when configured: every CLI call builds settings

    for part in parts:
        try:
            ipaddress.ip_network(part, strict=False)
        except ValueError as exc:
            raise ValueError(f"STUDIOLO_TRUSTED_PROXIES: not an address or CIDR: {part!r}") from exc
    return tuple(parts)
