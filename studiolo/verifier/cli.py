"""`studiolo verifier keygen` and `studiolo verifier run` (the CLI calls `register`)."""

from __future__ import annotations

import pwd
import signal
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo._exceptions import InvalidRequest, StudioloError
from studiolo.settings import ClientSettings, Settings
from studiolo.verifier.isolation import Isolation, IsolationUnavailable
from studiolo.verifier.keyfile import KeyFileError, generate_key_file, load_key_file
from studiolo.verifier.port import VerifierPort
from studiolo.verifier.runner import Runner
from studiolo.verifier.sandbox import Limits

__all__ = ["build", "register"]

_MIB = 1024 * 1024


def register(app: typer.Typer) -> None:
    """Add the `verifier` command group to the main CLI."""
    app.add_typer(build(), name="verifier")


def build() -> typer.Typer:
    verifier = typer.Typer(
        name="verifier",
        help="Be an admitted verifier: check candidates on their exact bytes and sign receipts.",
        no_args_is_help=True,
    )
    verifier.command("keygen")(keygen)
    verifier.command("run")(run)
    return verifier


def keygen(
    out: Annotated[Path, typer.Option("--out", "-o", help="where to write the private key (mode 0600)")],
    force: Annotated[bool, typer.Option(help="replace an existing key file")] = False,
) -> None:
    """Write a new Ed25519 private key; print the public key to register for the verifier."""
    try:
        public = generate_key_file(out, force=force)
    except (KeyFileError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(public)


def run(
    ctx: typer.Context,
    key: Annotated[Path, typer.Option(help="the verifier's private key file (from `keygen`)")],
    once: Annotated[bool, typer.Option(help="process the queue once and exit")] = False,
    poll: Annotated[float, typer.Option(min=0.1, help="seconds between polls of an empty queue")] = 5.0,
    timeout: Annotated[float, typer.Option(min=0.1, help="ceiling on one check, seconds")] = 300.0,
    memory_mb: Annotated[
        int, typer.Option(min=16, help="memory limit of a check (all its processes), MiB")
    ] = 2048,
    processes: Annotated[int, typer.Option(min=8, help="process limit of a check (all its processes)")] = 256,
    scratch_mb: Annotated[int, typer.Option(min=1, help="size of a check's scratch tmpfs, MiB")] = 512,
    tree_mb: Annotated[int, typer.Option(min=1, help="largest candidate tree to materialize, MiB")] = 1024,
    toolchain: Annotated[
        list[Path] | None,
        typer.Option(help="also mount this directory read-only in every check (repeatable)"),
    ] = None,
    unsafe_no_isolation: Annotated[
        bool,
        typer.Option(
            "--unsafe-no-isolation",
            help="run checker code WITHOUT namespaces, uid drop or per-check cgroups (it can read "
            "whatever this process can: the key, the token)",
        ),
    ] = False,
    workdir: Annotated[
        Path | None, typer.Option(help="where to make the temporary trees (default: the system's)")
    ] = None,
    run_as: Annotated[
        str | None, typer.Option(help="run checkers as this user (default nobody; the verifier runs as root)")
    ] = None,
    embedded: Annotated[
        bool, typer.Option(help="open the ledger at $STUDIOLO_DATABASE_URL instead of calling the service")
    ] = False,
    url: Annotated[str | None, typer.Option(help="service URL [env STUDIOLO_URL]")] = None,
    token: Annotated[
        str | None, typer.Option(help="the verifier's bearer token [env STUDIOLO_TOKEN]")
    ] = None,
    project: Annotated[str | None, typer.Option(help="project id [env STUDIOLO_PROJECT]")] = None,
) -> None:
    """Take verification work, check each candidate tree, post signed receipts.

    Exit codes: 0 done (failed checks are results, not errors), 1 an item could not be
    checked (no receipt was signed for it), 2 bad setup (key, token, service).
    """
    where = _client_settings(ctx).with_overrides(url=url, token=token, project=project)
    limits = Limits(
        timeout=timeout,
        memory_bytes=memory_mb * _MIB,
        processes=processes,
        scratch_bytes=scratch_mb * _MIB,
        tree_bytes=tree_mb * _MIB,
        run_as=_user(run_as),
    )
    with ExitStack() as cleanup:
        try:
            private = load_key_file(key)
            port = _port(where, embedded, cleanup)
        except (KeyFileError, StudioloError, httpx.HTTPError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        runner = _runner(port, private, limits, workdir, unsafe_no_isolation, toolchain or [])
        if not once:
            stop = threading.Event()
            _stop_on_signals(stop)
            runner.run_forever(poll, stop)
            return
        try:
            reports = runner.run_once()
        except (StudioloError, OSError, httpx.HTTPError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
    typer.echo(f"{len(reports)} item(s) processed")
    if any(r.status == "error" for r in reports):
        raise typer.Exit(1)


def _runner(
    port: VerifierPort,
    key: Ed25519PrivateKey,
    limits: Limits,
    workdir: Path | None,
    unsafe: bool,
    toolchain: list[Path],
) -> Runner:
    try:
        isolation = None if unsafe else Isolation.probe(limits.run_as, toolchain)
        runner = Runner(
            port,
            key,
            limits=limits,
            workdir=workdir,
            echo=typer.echo,
            isolation=isolation,
            unsafe_no_isolation=unsafe,
        )
    except IsolationUnavailable as exc:
        typer.echo(
            f"error: cannot isolate checks: {exc}. Checker code would run with this process's access "
            "(its key, token, files); install bubblewrap, or pass --unsafe-no-isolation to run anyway "
            "(see docs/verifiers.md)",
            err=True,
        )
        raise typer.Exit(2) from exc
    if runner.isolation is None:
        typer.echo("warning: --unsafe-no-isolation: checks are NOT isolated from this verifier", err=True)
    elif not runner.isolation.cgroups.parents:
        why = runner.isolation.cgroups.reason
        typer.echo(f"warning: no per-check memory/process limits ({why}); per process only", err=True)
    return runner


def _client_settings(ctx: typer.Context) -> ClientSettings:
    """The main CLI's resolved settings (flags, environment, config file), else the environment's."""
    state = getattr(ctx.find_root().obj, "settings", None)
    return state if isinstance(state, ClientSettings) else ClientSettings.from_env()


def _user(name: str | None) -> tuple[int, int] | None:
    if name is None:
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError as exc:
        typer.echo(f"error: no user {name!r}", err=True)
        raise typer.Exit(2) from exc
    return entry.pw_uid, entry.pw_gid


def _port(where: ClientSettings, embedded: bool, cleanup: ExitStack) -> VerifierPort:
    if not where.token:
        raise InvalidRequest("a bearer token is required: --token or STUDIOLO_TOKEN")
    if not embedded:
        from studiolo.verifier.http import HttpPort

        http = HttpPort.connect(where.url, where.token, where.project)
        cleanup.callback(http.close)
        return http
    from studiolo.service import Coordinator
    from studiolo.store import Store
    from studiolo.verifier.inprocess import InProcessPort

    settings = Settings.from_env()
    store = Store(settings.database_url)
    cleanup.callback(store.dispose)
    coordinator = Coordinator(store, settings)
    caller = coordinator.authenticate(where.token)
    project = where.project or caller.project_id
    if project is None:
        raise InvalidRequest("a service admin names the project: --project")
    return InProcessPort(coordinator, caller, project)


def _stop_on_signals(stop: threading.Event) -> None:
    def handler(_signum: int, _frame: Any) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
