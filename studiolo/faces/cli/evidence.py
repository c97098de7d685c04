"""Evidence and completion: the verification queue, receipts, and the completion request."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from studiolo._exceptions import InvalidRequest
from studiolo.faces.cli._output import Printer, escape_markup
from studiolo.faces.cli._state import CliState, JsonOpt, emit, state, table

if TYPE_CHECKING:  # imported where used: `complete` loads no key, `--json` prints no table
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["load_private_key", "register"]

receipt_app = typer.Typer(help="Receipts: sign one with a verifier key.", no_args_is_help=True)
_RECEIPT_COLUMNS = ["id", "reused"]


def register(app: typer.Typer) -> None:
    app.add_typer(receipt_app, name="receipt")
    for fn in (verifications, receipts, complete):
        app.command(fn.__name__)(fn)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PKCS#8 PEM file (what `studiolo verifier keygen` writes)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise InvalidRequest(f"{path} is not a readable, unencrypted PEM private key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidRequest(f"{path} does not hold an Ed25519 key")
    return key


def verifications(
    ctx: typer.Context,
    project: Annotated[str | None, typer.Option("--project", "-p")] = None,
    limit: int = 50,
    json_out: JsonOpt = False,
) -> None:
    """Your verification work: criteria of current candidates you are admitted to check."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.verifications(project=project, limit=limit)
    emit(st, rows, lambda con: con.print(table(rows, ["task_id", "candidate_id", "criterion", "checker"])))


def receipts(ctx: typer.Context, candidate_id: str, json_out: JsonOpt = False) -> None:
    """The receipts recorded for a candidate."""
    st = state(ctx, json_out)
    with st.client() as c:
        rows = c.receipts(candidate_id)

    def human(con: Printer) -> None:
        for r in rows:
            b = r.body
            con.print(f"{r.id}  {b['criterion']} via {b['checker']}: [bold]{b['result']}[/] by {b['issuer']}")
            if r.bytes_deleted:
                con.print(f"  [yellow]{escape_markup(r.bytes_deleted)}[/]")

    emit(st, rows, human)


@receipt_app.command("sign")
def receipt_sign(
    ctx: typer.Context,
    candidate_id: str,
    criterion: Annotated[str, typer.Option(help="the contract's criterion id")],
    result: Annotated[str, typer.Option(help="pass or fail")],
    key_file: Annotated[Path, typer.Option(help="the verifier's Ed25519 private key (PEM)")],
    json_out: JsonOpt = False,
) -> None:
    """Sign and post a receipt stating RESULT for a candidate's exact bytes.

    It records the result you state; it runs nothing. `studiolo verifier run` checks.
    """
    st = state(ctx, json_out)
    key = load_private_key(key_file)
    with st.client() as c:
        r = c.sign_receipt(candidate_id, criterion, result, key, issued_at_ms=int(time.time() * 1000))
    emit(st, r, lambda con: con.print(f"receipt {r.id}: {criterion} {result}"))


def _claimed_under(st: CliState, attempt_id: str) -> str:
    # The contract the attempt was claimed under; the task's current one would make
    # `contract_mismatch` unreachable. Whether they differ is the service's question.
    remembered = st.claimed_contract(attempt_id)
    if remembered is None:
        raise InvalidRequest(
            f"attempt {attempt_id} was not claimed through this CLI (state: {st.settings.state_dir}): "
            "pass --contract-hash, the contract you worked under"
        )
    return remembered


def complete(
    ctx: typer.Context,
    task_id: str,
    candidate: Annotated[str, typer.Option(help="the candidate to publish")],
    evidence: Annotated[
        list[str] | None, typer.Option(help="receipt id (default: all of the candidate's)")
    ] = None,
    attempt: Annotated[str | None, typer.Option(help="default: the candidate's attempt")] = None,
    fence: Annotated[int | None, typer.Option(help="default: the attempt's fence")] = None,
    contract_hash: Annotated[
        str | None,
        typer.Option(help="the contract you worked under (default: the one seen when this CLI claimed)"),
    ] = None,
    request_id: Annotated[
        str | None, typer.Option(help="default: ATTEMPT:CANDIDATE, so a retry is an idempotent replay")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Ask for the task to be recorded as completed. Exit 1 with every failed predicate if not."""
    st = state(ctx, json_out)
    with st.client() as c:
        cand = c.candidate(candidate)
        att = c.attempt(attempt or cand.attempt_id)
        contract = contract_hash or _claimed_under(st, att.id)
        cited = evidence if evidence is not None else [r.id for r in c.receipts(cand.id)]
        done = c.complete(
            task_id,
            request_id=request_id or f"{att.id}:{cand.id}",
            attempt_id=att.id,
            fence=fence if fence is not None else att.fence,
            contract_hash=contract,
            candidate_id=cand.id,
            evidence=cited,
        )
    out = done.completion

    def human(con: Printer) -> None:
        how = "already recorded (idempotent replay)" if done.replay else "[green]accepted[/]"
        con.print(f"{how}: {out.id} at commit version {out.commit_version}")
        con.print(f"revisions {out.revisions}")

    emit(st, {"replay": done.replay, "completion": out}, human)
