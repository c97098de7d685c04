"""The `studiolo` command line: workers and admins over the HTTP API (`studiolo.client`),
operators over the local ledger (init, serve, run, demo, audit, db, backup), and the
simulations (study, a2a-study).

Every command is registered by name in `COMMANDS` and imported only when it runs
(`_lazy.LazyGroup`): `studiolo --help` and a worker command load no server code.

Configuration: flags > environment (`STUDIOLO_URL`, `STUDIOLO_TOKEN`, `STUDIOLO_PROJECT`) >
a TOML config file (`STUDIOLO_CONFIG`, default ~/.config/studiolo/config.toml), read only
through `studiolo.client_settings.ClientSettings`. Exit codes are documented in `_state`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from studiolo.client_settings import ClientSettings
from studiolo.faces.cli._lazy import Lazy
from studiolo.faces.cli._state import CliState, RootGroup

__all__ = ["COMMANDS", "CliState", "app", "build_app", "main"]

_WORK, _CONTENT, _EVIDENCE = (
    "studiolo.faces.cli.work",
    "studiolo.faces.cli.content",
    "studiolo.faces.cli.evidence",
)
_ADMIN, _LEDGER, _STORE = "studiolo.faces.cli.admin", "studiolo.faces.cli.ledger", "studiolo.store.cli"

# Every command, in the order `--help` lists them: the module whose `register(app)` adds it
# (imported only when the command runs) and its one-line help. To add a command, add it in
# its module's `register` and a line here; tests/faces/test_cli_lazy.py checks both agree.
COMMANDS: dict[str, Lazy] = {
    "whoami": Lazy(_WORK, "Show the principal your token authenticates as."),
    "orient": Lazy(_WORK, "What to read first: the policy, your grants, the open tasks, your attempts."),
    "task": Lazy(_WORK, "Tasks: list, show, create, cancel, migrate, reassign."),
    "claim": Lazy(_WORK, "Claim a task: start an attempt with a lease and a fence."),
    "heartbeat": Lazy(_WORK, "Extend the lease of your live attempt."),
    "release": Lazy(_WORK, "Give the task back: it becomes open again."),
    "handoff": Lazy(_WORK, "Leave references to authority for a successor."),
    "events": Lazy(_WORK, "The project's audit events; `--follow` streams them as they happen."),
    "checkout": Lazy(
        _CONTENT, "Write the current artifacts (under a prefix) into a directory, with a manifest."
    ),
    "submit": Lazy(_CONTENT, "Upload a directory's changed files as a candidate of your attempt."),
    "artifact": Lazy(_CONTENT, "Artifacts: list, show, cat, put (a direct edit)."),
    "observe": Lazy(_CONTENT, "Record an observation (a historical fact; it never implies it still holds)."),
    "verifications": Lazy(
        _EVIDENCE, "Your verification work: criteria of current candidates you are admitted to check."
    ),
    "receipts": Lazy(_EVIDENCE, "The receipts recorded for a candidate."),
    "receipt": Lazy(_EVIDENCE, "Receipts: sign one with a verifier key."),
    "complete": Lazy(
        _EVIDENCE, "Ask for the task to be recorded as completed. Exit 1 with every failed predicate if not."
    ),
    "git": Lazy("studiolo.faces.cli.git", "The project's git repository: status, import."),
    "rebase": Lazy(
        "studiolo.faces.cli.git",
        "Merge your work tree's change onto the current published commit (git merge-tree).",
    ),
    "project": Lazy(_ADMIN, "Projects (service admins create them)."),
    "principal": Lazy(_ADMIN, "Principals and their tokens."),
    "grant": Lazy(_ADMIN, "Grants: actions over path scopes; revocable."),
    "policy": Lazy(_ADMIN, "Policies: the project's versioned handbook."),
    "checker": Lazy(_ADMIN, "Checkers and the verifiers admitted for them."),
    "blob": Lazy(_ADMIN, "Blobs: delete the ones nothing references (service admins)."),
    "admin": Lazy(
        "studiolo.faces.cli.retention",
        "Evidence retention, legal holds, deletion of bytes on request (project admins).",
    ),
    "a2a": Lazy("studiolo.faces.cli.a2a", "A2A: intake templates for work delegated by other agents."),
    "remote-org": Lazy(
        "studiolo.faces.cli.remote", "Remote organisations: the keys pinned for their agents."
    ),
    "delegate": Lazy(
        "studiolo.faces.cli.remote",
        "Delegate tasks to remote A2A agents; the review queue of indeterminate outcomes.",
    ),
    "mcp": Lazy(
        "studiolo.faces.cli.mcp", "Serve MCP on stdio (Claude Code, Codex, Cursor) as your token's principal."
    ),
    "verifier": Lazy(
        "studiolo.verifier.cli",
        "Be an admitted verifier: check candidates on their exact bytes and sign receipts.",
    ),
    "init": Lazy(_LEDGER, "Create the ledger and a service-admin token (printed once). Safe to re-run."),
    "serve": Lazy(
        _LEDGER, "Serve the HTTP API (initializes an empty ledger first, printing its admin token once)."
    ),
    "run": Lazy(
        _LEDGER, "`make run`: init if needed, seed the demo project if absent, print URLs and tokens, serve."
    ),
    "demo": Lazy(
        _LEDGER, "Play the scripted story in a temporary ledger: one acceptance and every rejection."
    ),
    "audit": Lazy(_LEDGER, "The hash-chained audit log."),
    "db": Lazy(_STORE, "The ledger's schema (Alembic migrations shared by SQLite and PostgreSQL)."),
    "backup": Lazy(_STORE, "Write every table, read on one consistent snapshot, to one portable file."),
    "restore": Lazy(_STORE, "Replace the ledger with a backup and start a new authority incarnation."),
    "reconfirm": Lazy(
        _LEDGER, "As the operator: vouch for tokens and admissions a restore held (audited); none: list them."
    ),
    "keys": Lazy("studiolo.faces.cli.keys", "The service key that signs completion receipts."),
    "study": Lazy(
        "studiolo.faces.cli_study",
        "Re-run the report's bounded interleaving study (model mode, or --engine).",
    ),
    "a2a-study": Lazy(
        "studiolo.faces.cli_a2a_study",
        "Simulate A2A delegations: a requester that trusts the terminal state beside the quiescence check.",
    ),
    "eval": Lazy(
        "studiolo.faces.cli.eval",
        "Run the report's evaluation on a repository's history (or --check, --replay).",
    ),
}


class _Studiolo(RootGroup):
    lazy = COMMANDS


def _root(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option(help="service URL [env STUDIOLO_URL]")] = None,
    token: Annotated[str | None, typer.Option(help="bearer token [env STUDIOLO_TOKEN]")] = None,
    project: Annotated[str | None, typer.Option(help="default project id [env STUDIOLO_PROJECT]")] = None,
) -> None:
    """Studiolo: a completion ledger for AI agents that share one project."""
    base = ctx.obj if isinstance(ctx.obj, CliState) else CliState(ClientSettings.from_env())
    ctx.obj = CliState(base.settings.with_overrides(url=url, token=token, project=project), base.transport)


def build_app() -> typer.Typer:
    cli = typer.Typer(
        name="studiolo",
        cls=_Studiolo,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    cli.callback()(_root)
    return cli


app = build_app()


def main() -> None:
    # `import httpx` also imports httpx's own command line (click, pygments, rich's progress
    # and syntax: ~40% of a worker command's imports) unless that module is marked absent.
    # This process never runs it; a library user importing `studiolo.client` is unaffected.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: "absent"
    app(prog_name="studiolo")
