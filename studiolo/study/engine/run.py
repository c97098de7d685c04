"""Run the study in engine mode: every schedule through the real door, on both cores.

The schedules are cut into pieces (all schedules sharing a prefix of at most four events),
the pieces packed into chunks of similar size, and each chunk explored in its own fresh
ledger by a worker process (``spawn``).  The negative controls run as one more job.  The
model decides every schedule again in this process so each engine decision can be compared
with the model's, schedule by schedule.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from itertools import groupby

from studiolo.study.controls import Control, ControlResult
from studiolo.study.engine.compare import compare_rows
from studiolo.study.engine.controls import run_controls
from studiolo.study.engine.doors import DOORS
from studiolo.study.engine.explore import EngineDecision, Exploration, explore
from studiolo.study.engine.render import engine_source_digest
from studiolo.study.engine.result import EngineResult
from studiolo.study.harness import execute
from studiolo.study.mechanisms import MECHANISMS
from studiolo.study.result import StudyResult
from studiolo.study.schedules import Schedule, all_schedules, summarize
from studiolo.study.setting import study_setup
from studiolo.study.space import Progress, StudySpace, prepare, rows
from studiolo.study.table import Decision

__all__ = ["CHUNKS", "WORKERS", "partition", "run_engine"]

WORKERS = 2  # "use both cores"
CHUNKS = 16  # ledgers per run: enough for an even split and a lively progress bar
_MAX_CUT = 4  # cut above the preflight and commit nodes, so each runs in exactly one chunk


def partition(schedules: Sequence[Schedule], chunks: int = CHUNKS) -> tuple[tuple[int, ...], ...]:
    """Schedule indices in ``chunks`` groups of similar size, each a union of prefix pieces.

    A piece is every schedule that shares one prefix of at most four events, so a prefix
    longer than the piece's is run in exactly one chunk; only the short shared prefixes are
    run again in other chunks (in their own ledgers).
    """
    limit = max(1, len(schedules) // (2 * chunks))
    ordered = sorted(range(len(schedules)), key=lambda i: schedules[i])
    pieces = _pieces(ordered, schedules, 1, limit)
    bins: list[list[int]] = [[] for _ in range(min(chunks, len(pieces)))]
    for piece in sorted(pieces, key=len, reverse=True):
        min(bins, key=len).extend(piece)
    return tuple(tuple(sorted(b)) for b in bins if b)


def _pieces(indices: list[int], schedules: Sequence[Schedule], depth: int, limit: int) -> list[list[int]]:
    out: list[list[int]] = []
    for _, group in groupby(indices, key=lambda i: schedules[i][:depth]):  # indices sorted by schedule
        members = list(group)
        if len(members) > limit and depth < _MAX_CUT:
            out.extend(_pieces(members, schedules, depth + 1, limit))
        else:
            out.append(members)
    return out


def _explore_chunk(indices: tuple[int, ...]) -> Exploration:
    """A worker's job: one chunk of schedules in a fresh ledger."""
    schedules = all_schedules()
    return explore([(i, schedules[i]) for i in indices])


def run_engine(
    progress: Progress | None = None, *, workers: int = WORKERS, chunks: int = CHUNKS
) -> EngineResult:
    """The bounded study through the real completion transaction (87,022 + 91 decisions).

    ``workers`` processes explore ``chunks`` groups of schedules, each in a fresh ledger;
    neither changes the result, transaction counts included.
    """
    space = prepare()
    pieces = partition(space.schedules, chunks)
    total = len(DOORS) * (len(space.schedules) + len(Control))
    explorations, controls = _explore_all(pieces, workers, total, progress)
    decisions: dict[int, tuple[EngineDecision, ...]] = {}
    transactions: Counter[str] = Counter()
    for exploration in explorations:
        decisions.update(exploration.decisions)
        transactions.update(exploration.transactions)
    engine = [decisions[i] for i in range(len(space.schedules))]
    if progress is not None:
        progress(total, total)
    return _assemble(space, engine, controls, transactions)


def _explore_all(
    chunks: Sequence[tuple[int, ...]], workers: int, total: int, progress: Progress | None
) -> tuple[list[Exploration], tuple[ControlResult, ...]]:
    if workers <= 1:
        found = [_explore_chunk(chunk) for chunk in chunks]
        return found, run_controls()
    done = 0
    explorations: list[Exploration] = []
    with _pool(workers) as pool:
        controls = pool.submit(run_controls)
        jobs: dict[Future[Exploration], int] = {pool.submit(_explore_chunk, c): len(c) for c in chunks}
        for job in as_completed(jobs):
            explorations.append(job.result())
            done += jobs[job] * len(DOORS)
            if progress is not None:
                progress(done, total)
        return explorations, controls.result()


@contextmanager
def _pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        yield pool


def _assemble(
    space: StudySpace,
    engine: Sequence[tuple[EngineDecision, ...]],
    controls: tuple[ControlResult, ...],
    transactions: Counter[str],
) -> EngineResult:
    ids = [d.mechanism_id for d in DOORS]
    if ids != [m.mechanism_id for m in MECHANISMS]:
        raise RuntimeError("the engine's doors and the model's mechanisms are not in the same order")
    setup = study_setup()
    model = [execute(s, MECHANISMS, setup) for s in space.schedules]
    engine_rows = rows(space, ids, [[Decision(d.accepted, d.replay) for d in row] for row in engine])
    model_rows = rows(space, ids, model)
    comparisons = compare_rows(
        space.schedules,
        [r.row for r in model_rows],
        [r.row for r in engine_rows],
        [[d.accepted for d in row] for row in model],
        [[d.accepted for d in row] for row in engine],
    )
    study = StudyResult(
        mode="engine",
        source_digest=engine_source_digest(),
        schedules=summarize(space.schedules),
        oracle=space.oracle,
        mechanisms=engine_rows,
        controls=controls,
    )
    full = ids.index("full-atomic")
    agreement = sum(row[full].accepted == label for row, label in zip(engine, space.labels, strict=True))
    reasons = _reasons(ids, engine)
    return EngineResult(study, comparisons, agreement, reasons, tuple(sorted(transactions.items())))


def _reasons(
    ids: Sequence[str], engine: Sequence[tuple[EngineDecision, ...]]
) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    tallies = [Counter(row[j].reason for row in engine if not row[j].accepted) for j in range(len(ids))]
    return tuple((mid, tuple(sorted(t.items()))) for mid, t in zip(ids, tallies, strict=True))
