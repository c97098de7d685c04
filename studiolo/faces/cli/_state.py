"""What every command shares: configuration, the client, output (Rich or `--json`), and the
one place that maps the error tree to exit codes.

Exit codes: 0 ok · 1 rejected or conflict (409) · 2 usage or invalid request (400, 413, 422)
· 3 unauthenticated, not authorized or not found (401, 403, 404) · 4 service unreachable or
internal error.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer import _click

from studiolo._exceptions import InvalidRequest, StudioloError
from studiolo.client_settings import ClientSettings
from studiolo.faces.cli._lazy import LazyGroup
from studiolo.faces.cli._output import Printer, Rows, escape_markup, printer

if TYPE_CHECKING:  # imported where used, so that `studiolo --help` loads none of them
    import httpx
    from pydantic import BaseModel

    from studiolo.client import Client

__all__ = ["CliState", "JsonOpt", "RootGroup", "emit", "exit_code", "state", "table"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass
class CliState:
    settings: ClientSettings = field(default_factory=ClientSettings)
    transport: httpx.BaseTransport | None = None  # tests inject an in-process transport
    json: bool = False

    def client(self) -> Client:
        from studiolo.client import Client

        s = self.settings
        return Client(s.url, s.token, project=s.project, transport=self.transport)

    def remember_contract(self, attempt_id: str, task_id: str, contract_hash: str) -> None:
        """Keep the contract an attempt was claimed under, for `complete` (one file each)."""
        path = self._claim_file(attempt_id)
        if path is None:
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        record = {"attempt_id": attempt_id, "task_id": task_id, "contract_hash": contract_hash}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, sort_keys=True) + "\n")
        os.replace(tmp, path)

    def claimed_contract(self, attempt_id: str) -> str | None:
        """The contract hash remembered when this CLI claimed the attempt, if it did."""
        path = self._claim_file(attempt_id)
        if path is None or not path.is_file():
            return None
        value = json.loads(path.read_text()).get("contract_hash")
        return value if isinstance(value, str) else None

    def _claim_file(self, attempt_id: str) -> Path | None:
        if self.settings.state_dir is None:
            return None
        if not _SAFE_ID.fullmatch(attempt_id):  # an id from the server names a file here
            raise InvalidRequest(f"not an attempt id: {attempt_id!r}")
        return self.settings.state_dir / "claims" / f"{attempt_id}.json"


def state(ctx: typer.Context, json_out: bool = False) -> CliState:
    """The command's state; records `--json` so that errors print in the same format."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState(ClientSettings.from_env())
    root.obj.json = json_out
    return root.obj


def exit_code(status: int) -> int:
    if status == 409:
        return 1
    if status in (400, 413, 422):
        return 2
    if status in (401, 403, 404, 410):  # 410: the bytes were deleted
        return 3
    return 4


def _plain(value: Any) -> Any:
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def emit(st: CliState, value: Any, human: Callable[[Printer], None] | None = None) -> None:
    """Print `value` as JSON (`--json`) or through `human` (default: a key/value table), on
    a terminal with Rich, else as plain lines (`_output`)."""
    if st.json:
        typer.echo(json.dumps(_plain(value), indent=2, sort_keys=True))
        return
    from pydantic import BaseModel

    console = printer()
    if human is not None:
        human(console)
    elif isinstance(value, BaseModel):
        console.print(_record(value))
    else:
        console.print(value)


def _record(model: BaseModel) -> Rows:
    pairs = [
        (key, val if isinstance(val, str) else json.dumps(val))
        for key, val in model.model_dump(mode="json").items()
    ]
    return Rows(columns=("field", "value"), rows=pairs, header=False)


def table(rows: Iterable[BaseModel], columns: Sequence[str], title: str | None = None) -> Rows:
    data = [row.model_dump(mode="json") for row in rows]
    return Rows(columns=columns, rows=[[_cell(d.get(c)) for c in columns] for d in data], title=title)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value)


class RootGroup(LazyGroup):
    """Maps errors raised by any command to a message and an exit code, in one place."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except StudioloError as exc:
            _report(ctx, exc.status, exc.to_dict())
            raise typer.Exit(exit_code(exc.status)) from exc
        except Exception as exc:
            if not _is_transport_error(exc):
                raise
            detail = f"cannot reach the service: {exc}"
            _report(ctx, 0, {"reason": "unreachable", "failed": ["unreachable"], "detail": detail})
            raise typer.Exit(4) from exc


def _is_transport_error(exc: Exception) -> bool:
    # Only a command that imported httpx can have raised one of its errors.
    httpx = sys.modules.get("httpx")
    return httpx is not None and isinstance(exc, httpx.HTTPError)


def _report(ctx: _click.Context, status: int, problem: dict[str, Any]) -> None:
    obj = ctx.find_root().obj
    if isinstance(obj, CliState) and obj.json:
        typer.echo(json.dumps({"status": status, **problem}, indent=2, sort_keys=True))
        return
    failed = problem.get("failed") or []
    extra = f" (failed: {', '.join(failed)})" if len(failed) > 1 else ""
    text = escape_markup(f"{problem['reason']}: {problem['detail']}{extra}")  # the server's words
    out = printer(stderr=True)
    out.print(f"[red]error[/] {text}", highlight=False)
    for d in problem.get("details") or []:  # what each failed predicate found, in words
        out.print(escape_markup(f"  {d.get('reason')}: {d.get('text', '')}"), highlight=False)
