"""``studiolo eval``: the report's §8 evaluation on a repository's history
(docs/evaluation.md). A thin face: parse, call :mod:`studiolo.eval`, print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register"]

_SHIPPED_REPO = "tomli.bundle"


def register(app: typer.Typer) -> None:
    """Add the ``eval`` command to ``app``."""
    app.command("eval")(eval_command)


def eval_command(
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo",
            help="A git repository, bare repository or bundle [default: the file's, found "
            "beside the working directory or in ../shared/eval/].",
            show_default=False,
        ),
    ] = None,
    until: Annotated[str, typer.Option(help="The last commit of the window (first-parent line).")] = "HEAD",
    tasks: Annotated[int, typer.Option(min=1, max=200, help="How many commits (tasks) end at --until.")] = 6,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "1",
    mechanism: Annotated[list[str] | None, typer.Option(help="Only these mechanisms (repeatable).")] = None,
    read_policy: Annotated[
        list[str] | None, typer.Option(help="Only these read policies (repeatable).")
    ] = None,
    edits: Annotated[int, typer.Option(min=0, help="Human direct edits from later commits.")] = 4,
    out: Annotated[Path, typer.Option(help="The results file to write.", dir_okay=False)] = Path(
        "eval-results.json"
    ),
    traces: Annotated[
        Path | None,
        typer.Option(help="Write the counterexample traces here [default: traces/ beside --out]."),
    ] = None,
    all_traces: Annotated[
        bool, typer.Option("--all-traces", help="Write every cell's trace, not only counterexamples.")
    ] = False,
    check: Annotated[
        Path | None,
        typer.Option(
            help="Recompute this results file and compare (timing excluded).",
            metavar="RESULTS",
            dir_okay=False,
        ),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            help="Re-run this trace's cell and compare every record.", metavar="TRACE", dir_okay=False
        ),
    ] = None,
    live: Annotated[
        bool,
        typer.Option(
            "--live", help="The full contract with agents in their own processes through fault proxies."
        ),
    ] = False,
    agent_cmd: Annotated[
        str | None,
        typer.Option(help="With --live: run this command (+ its workspace) as the first agent; see docs."),
    ] = None,
    unsafe_no_isolation: Annotated[
        bool, typer.Option("--unsafe-no-isolation", help="Run the suite without the verifier's sandbox.")
    ] = False,
) -> None:
    """Run the report's evaluation on a repository's history (or --check, --replay)."""
    from studiolo.eval.mechanisms import MECHANISMS
    from studiolo.eval.results import check_results, render_results, render_table, replay_trace, write_traces
    from studiolo.eval.run import EvalConfig, run_eval

    echo = typer.echo
    if check is not None or replay is not None:
        target = check if check is not None else replay
        assert target is not None
        found = repo or _find_repository(_named_repository(target))
        outcome = (check_results if check is not None else replay_trace)(target, found, echo)
        echo(outcome.message)
        raise typer.Exit(0 if outcome.ok else 1)
    if repo is None:
        repo = _find_repository(_SHIPPED_REPO)
    if live or agent_cmd:
        _live(
            repo, until, tasks, int(seeds.split(",")[0]), edits, agent_cmd, out, traces, unsafe_no_isolation
        )
        return
    unknown = [m for m in mechanism or () if m not in MECHANISMS]
    if unknown:
        raise typer.BadParameter(f"unknown mechanism(s) {unknown}; choose from {list(MECHANISMS)}")
    config = EvalConfig(
        repository=repo,
        until=until,
        tasks=tasks,
        seeds=tuple(int(s) for s in seeds.split(",") if s.strip()),
        mechanisms=tuple(mechanism or MECHANISMS),
        read_policies=tuple(read_policy or ("written", "opened", "package")),
        edits=edits,
        unsafe_no_isolation=unsafe_no_isolation,
    )
    result = run_eval(config, echo)
    out.write_text(render_results(result), encoding="utf-8")
    written = write_traces(result, traces or out.parent / "traces", every=all_traces)
    doc = json.loads(out.read_text(encoding="utf-8"))
    echo(render_table(doc))
    for name, verdict in doc["falsification"].items():
        echo(f"falsification: {name}: {verdict}")
    echo(f"wrote {out} and {len(written)} trace(s); {result.wall_s:.0f} s")
    raise typer.Exit(1 if doc["falsification"]["rejected"] else 0)


def _named_repository(path: Path) -> str:
    """The repository name a results file or a trace's header records."""
    try:
        if path.suffix == ".jsonl":
            first = path.read_text(encoding="utf-8").split("\n", 1)[0]
            return str(json.loads(first)["config"]["repository"])
        return str(json.loads(path.read_text(encoding="utf-8"))["config"]["repository"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise typer.BadParameter(f"{path}: not an evaluation results file or trace ({exc})") from exc


def _find_repository(name: str) -> str:
    """`name` here, or in `shared/eval/` beside this directory or any of its parents."""
    here = Path.cwd()
    for candidate in (here / name, *(p / "shared" / "eval" / name for p in (here, *here.parents))):
        if candidate.exists():
            return str(candidate)
    raise typer.BadParameter(f"repository {name!r} not found here or in ../shared/eval/: name it with --repo")


def _live(
    repo: str,
    until: str,
    tasks: int,
    seed: int,
    edits: int,
    agent_cmd: str | None,
    out: Path,
    traces: Path | None,
    unsafe_no_isolation: bool,
) -> None:
    from studiolo.eval.live import LiveConfig, run_live
    from studiolo.eval.trace import dump_lines

    config = LiveConfig(
        repo,
        until,
        tasks,
        seed=seed,
        edits=edits,
        agent_cmd=agent_cmd,
        unsafe_no_isolation=unsafe_no_isolation,
    )
    result = run_live(config, typer.echo)
    trace = result.pop("trace")
    target = traces or out.parent / "traces"
    target.mkdir(parents=True, exist_ok=True)
    (target / "live.jsonl").write_text(dump_lines(trace), encoding="utf-8")
    out.write_text(json.dumps(result, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    typer.echo(
        f"live: {result['completed']}/{result['tasks']} tasks completed, {result['accepted']} accepted "
        f"({result['unsafe_accept']} unsafe by the oracle), {result['transport_retries']} transport retries, "
        f"audit chain {'ok' if result['audit_chain_ok'] else 'BROKEN'}; "
        f"wrote {out} and {target / 'live.jsonl'}"
    )
    raise typer.Exit(0 if result["unsafe_accept"] == 0 and result["audit_chain_ok"] else 1)
