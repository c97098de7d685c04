"""docs/cli.md, generated from the commands' own help (a test regenerates and compares).

python -m studiolo.faces.cli.docs > docs/cli.md
"""

from __future__ import annotations

import typer
from typer._click import core as _click
from typer.core import TyperGroup
from typer.main import get_command

__all__ = ["command_paths", "render"]

_HEADER = """\
# The `studiolo` command line

Generated from the commands' `--help` by `python -m studiolo.faces.cli.docs > docs/cli.md`;
a test regenerates it and fails when it differs.

Workers and admins talk to the HTTP API (`studiolo.client`); operators' commands (`init`,
`serve`, `run`, `demo`, `audit verify`, `db`, `backup`, `restore`) open the local ledger
(`--database-url`, else `STUDIOLO_DATABASE_URL`, else `sqlite:///studiolo.db` in the working
directory).

**Configuration**, strongest first: the flags `--url`, `--token`, `--project` (before the
command), the environment (`STUDIOLO_URL`, `STUDIOLO_TOKEN`, `STUDIOLO_PROJECT`), then a
TOML file at `STUDIOLO_CONFIG` (default `~/.config/studiolo/config.toml`) with the keys
`url`, `token`, `project`. A project-scoped token needs no `--project`.

**Claims remembered**: `claim` keeps the contract hash it claimed under in
`STUDIOLO_STATE_DIR` (default `$XDG_STATE_HOME/studiolo`, else `~/.local/state/studiolo`);
`complete` sends that hash, never the task's current one, so a task migrated since the
claim is refused with `contract_mismatch`. For an attempt claimed elsewhere, pass
`--contract-hash`.

**Output**: on a terminal, Rich tables; when the output is captured (an agent, a pipe, a
file), plain lines: no colour or markup, a table as its title, a header line and one line
per row with tab-separated cells. `--json` on every command prints JSON (on an error: the
problem, with `status`, `reason`, `failed`, `detail`, and a refused completion's `details`).
A refused completion prints, under its error line, one line per failed predicate saying what
it found ("dependency_stale: src/input.txt changed from revision 1 to 2 by editor at …";
docs/reasons.md).

**Exit codes**

| code | meaning |
|---|---|
| 0 | ok (including an idempotent replay of an accepted completion) |
| 1 | rejected or conflict (HTTP 409): a refused completion lists every failed predicate |
| 2 | usage error or invalid request (HTTP 400, 413, 422) |
| 3 | unauthenticated, not authorized, or not found (HTTP 401, 403, 404) |
| 4 | the service is unreachable, or an internal error |

Commands registered by other modules (`study`, `a2a-study`, `verifier …`, `db …`) follow
their own conventions, documented with them (`a2a-study`: docs/a2a.md, "The quiescence study").
"""


def command_paths(app: typer.Typer) -> list[tuple[str, ...]]:
    """Every leaf command, as the words that invoke it (lazy commands are loaded)."""
    out: list[tuple[str, ...]] = []

    def walk(ctx: _click.Context, path: tuple[str, ...]) -> None:
        cmd = ctx.command
        if not isinstance(cmd, TyperGroup):
            out.append(path)
            return
        for name in sorted(cmd.list_commands(ctx)):
            walk(_click.Context(_sub(ctx, name), info_name=name, parent=ctx), (*path, name))

    walk(_click.Context(get_command(app), info_name="studiolo"), ())
    return out


def _sub(ctx: _click.Context, name: str) -> _click.Command:
    assert isinstance(ctx.command, TyperGroup)
    cmd = ctx.command.get_command(ctx, name)
    assert cmd is not None, name
    return cmd


def _section(app: typer.Typer, path: tuple[str, ...]) -> str:
    ctx = _click.Context(get_command(app), info_name="studiolo")
    for word in path:
        ctx = _click.Context(_sub(ctx, word), info_name=word, parent=ctx)
    cmd = ctx.command
    usage = " ".join(["studiolo", *path, *cmd.collect_usage_pieces(ctx)])
    lines = [f"## `studiolo {' '.join(path)}`", "", (cmd.help or "").strip(), "", "```", usage, "```", ""]
    params = [p for p in cmd.get_params(ctx) if p.get_help_record(ctx) and "--help" not in p.opts]
    if params:
        lines += ["| option | help |", "|---|---|"]
        for p in params:
            record = p.get_help_record(ctx)
            assert record is not None
            lines.append(f"| `{record[0]}` | {record[1].replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines)


def render(app: typer.Typer) -> str:
    sections = [_section(app, path) for path in command_paths(app)]
    return _HEADER + "\n" + "\n".join(sections)


if __name__ == "__main__":
    from studiolo.faces.cli import app as _app

    print(render(_app), end="")
