"""Operator commands on the local ledger: init, serve, run (the demo server), demo, audit,
reconfirm (after a restore)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from rich.console import Console
from rich.table import Table

from studiolo._exceptions import InvalidRequest
from studiolo.demo import DemoProject, run_story, seed
from studiolo.faces.cli._output import Printer
from studiolo.faces.cli._state import JsonOpt, emit, state
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.store.authority import HeldPrincipal

__all__ = ["register"]

audit_app = typer.Typer(help="The hash-chained audit log.", no_args_is_help=True)
DatabaseUrl = Annotated[
    str | None, typer.Option(help="default: STUDIOLO_DATABASE_URL, else sqlite:///studiolo.db here")
]
Host = Annotated[str | None, typer.Option(help="default: STUDIOLO_HOST or 127.0.0.1")]
Port = Annotated[int | None, typer.Option(help="default: STUDIOLO_PORT or 8765")]


def register(app: typer.Typer) -> None:
    for fn in (init, serve, run, demo, reconfirm):
        app.command(fn.__name__)(fn)
    app.add_typer(audit_app, name="audit")


def _settings(database_url: str | None, host: str | None = None, port: int | None = None) -> Settings:
    base = Settings.from_env()
    h, p = host or base.host, port or base.port
    default_public = f"http://{base.host}:{base.port}"
    public = base.public_url if base.public_url != default_public else f"http://{h}:{p}"
    return dataclasses.replace(
        base, database_url=database_url or base.database_url, host=h, port=p, public_url=public
    )


def _coordinator(settings: Settings) -> Coordinator:
    return Coordinator(Store(settings.database_url, pool_size=settings.db_pool_size), settings)


def init(
    ctx: typer.Context,
    database_url: DatabaseUrl = None,
    admin_name: Annotated[str, typer.Option(help="name of the first service admin")] = "admin",
    json_out: JsonOpt = False,
) -> None:
    """Create the ledger and a service-admin token (printed once). Safe to re-run."""
    st = state(ctx, json_out)
    settings = _settings(database_url)
    issued = _coordinator(settings).initialize(admin_name)
    if issued is None:
        emit(st, {"initialized": False}, lambda con: con.print("the ledger is already initialized"))
        return
    out = {"initialized": True, "database_url": settings.database_url, "admin_token": issued.token}

    def human(con: Printer) -> None:
        con.print(f"initialized {settings.database_url}")
        con.print(f"admin token (shown once): [bold]{issued.token}[/]", soft_wrap=True)

    emit(st, out, human)


def serve(
    ctx: typer.Context,
    database_url: DatabaseUrl = None,
    host: Host = None,
    port: Port = None,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="server processes sharing the socket and the ledger")
    ] = 1,
) -> None:
    """Serve the HTTP API (initializes an empty ledger first, printing its admin token once)."""
    from studiolo.faces.http.server import serve as serve_http

    settings = _settings(database_url, host, port)
    coordinator = _coordinator(settings)
    issued = coordinator.initialize()
    console = Console(soft_wrap=True)
    if issued is not None:
        console.print(f"initialized {settings.database_url}; admin token (shown once): {issued.token}")
    console.print(f"serving {settings.public_url} (OpenAPI: {settings.public_url}/openapi.json)")
    serve_http(coordinator, settings, workers)


def run(
    ctx: typer.Context,
    database_url: DatabaseUrl = None,
    host: Host = None,
    port: Port = None,
    state_dir: Annotated[Path, typer.Option(help="where the demo's tokens and key are kept")] = Path(
        ".studiolo"
    ),
) -> None:
    """`make run`: init if needed, seed the demo project if absent, print URLs and tokens, serve."""
    from studiolo.faces.http.server import serve as serve_http

    settings = _settings(database_url, host, port)
    coordinator = _coordinator(settings)
    saved = _prepare_demo(coordinator, settings, state_dir)
    _banner(Console(soft_wrap=True), saved, state_dir)
    serve_http(coordinator, settings)


def _prepare_demo(coordinator: Coordinator, settings: Settings, state_dir: Path) -> dict[str, Any]:
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state_dir / "demo-tokens.json"
    saved: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    issued = coordinator.initialize()
    if issued is not None:
        saved = {"admin": issued.token}
    if "admin" not in saved:
        raise InvalidRequest(f"this ledger was initialized elsewhere; its admin token is not in {path}")
    admin = coordinator.authenticate(saved["admin"])
    if not any(p.name == "demo" for p in coordinator.projects(admin)):
        demo, tasks = seed(coordinator, admin)
        saved.update(_demo_state(demo, state_dir))
        saved["tasks"] = {t.title: t.id for t in tasks}
    saved["url"] = settings.public_url
    _write_private(path, (json.dumps(saved, indent=2, sort_keys=True) + "\n").encode())
    return saved


def _demo_state(demo: DemoProject, state_dir: Path) -> dict[str, Any]:
    key_path = state_dir / "demo-verifier.pem"
    pem = demo.verifier_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    _write_private(key_path, pem)
    principals = {
        n: {"id": i.principal.id, "kind": i.principal.kind.value, "token": i.token}
        for n, i in demo.issued.items()
    }
    return {"project_id": demo.project_id, "principals": principals, "verifier_key_file": str(key_path)}


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(data)


def _banner(console: Console, saved: dict[str, Any], state_dir: Path) -> None:
    url = saved["url"]
    console.rule("[bold]Studiolo")
    for label, where in (
        ("API", "/v1"),
        ("docs", "/docs"),
        ("OpenAPI", "/openapi.json"),
        ("health", "/healthz"),
        ("MCP", "/mcp"),
        ("dashboard", "/ui"),
        ("A2A card", "/.well-known/agent-card.json"),
    ):
        console.print(f"{label:>9}  {url}{where}")
    table = Table(
        title=f"demo project {saved.get('project_id')} — tokens (also in {state_dir}/demo-tokens.json)"
    )
    for col in ("who", "kind", "token"):
        table.add_column(col, overflow="fold")
    table.add_row("admin", "service admin", saved["admin"])
    for name, p in saved.get("principals", {}).items():
        table.add_row(name, p["kind"], p["token"])
    console.print(table)
    agent = saved.get("principals", {}).get("agent-a", {}).get("token", "<token>")
    console.print(f"try:  STUDIOLO_URL={url} STUDIOLO_TOKEN={agent} studiolo task list")
    console.print(f"verifier key (PEM): {saved.get('verifier_key_file')} · Ctrl-C stops the server")


def demo(ctx: typer.Context) -> None:
    """Play the scripted story in a temporary ledger: one acceptance and every rejection."""
    results = run_story(Console())
    if not all(r.ok for r in results):
        raise typer.Exit(1)


def reconfirm(
    ctx: typer.Context,
    principal_ids: Annotated[
        list[str] | None, typer.Argument(help="principals to vouch for (none: list what is held)")
    ] = None,
    database_url: DatabaseUrl = None,
    json_out: JsonOpt = False,
) -> None:
    """As the operator: vouch for tokens and admissions a restore held (audited); none: list them."""
    st = state(ctx, json_out)
    coordinator = _coordinator(_settings(database_url))
    try:
        if not principal_ids:
            held = coordinator.held_authority()
            emit(st, [dataclasses.asdict(h) for h in held], lambda con: _print_held(con, held))
            return
        done = [coordinator.reconfirm_locally(pid) for pid in principal_ids]
    finally:
        coordinator.store.dispose()

    def human(con: Printer) -> None:
        for r in done:
            what = f"{len(r.tokens)} token(s), admissions {list(r.admissions) or 'none'}"
            con.print(f"{r.principal_id}: " + (what if r.event_seq is not None else "nothing was held"))

    emit(st, [dataclasses.asdict(r) for r in done], human)


def _print_held(con: Printer, held: list[HeldPrincipal]) -> None:
    if not held:
        con.print("nothing is held")
    for h in held:
        where = h.project_id or "service"
        con.print(
            f"{h.principal_id} {h.kind} {h.name} ({where}): {h.tokens} token(s), "
            f"admissions {list(h.admissions) or 'none'}, grants {list(h.grants) or 'none'}",
            highlight=False,
        )


@audit_app.command("verify")
def audit_verify(ctx: typer.Context, database_url: DatabaseUrl = None, json_out: JsonOpt = False) -> None:
    """Recompute the audit chain of the local ledger (an operator command). Exit 1 if broken."""
    st = state(ctx, json_out)
    report = _coordinator(_settings(database_url)).verify_audit()
    out = dataclasses.asdict(report)

    def human(con: Printer) -> None:
        if report.ok:
            con.print(f"[green]ok[/]: {report.events} events, head {report.head}")
        else:
            con.print(f"[red]broken[/] at event {report.first_bad_seq}: {report.problem}")

    emit(st, out, human)
    if not report.ok:
        raise typer.Exit(1)
