"""``--check``: recompute the study and compare with a results file byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from studiolo.study.model_run import run_model
from studiolo.study.render import render_results
from studiolo.study.result import StudyResult
from studiolo.study.space import Progress

__all__ = ["CheckOutcome", "Difference", "Runner", "check_results", "first_difference"]


@dataclass(frozen=True)
class Difference:
    """The first place the file differs from the recomputed bytes (1-based line)."""

    line: int
    offset: int
    expected: str
    found: str


@dataclass(frozen=True)
class CheckOutcome:
    """``source_digest_differs`` is None when the file has no readable digest."""

    ok: bool
    message: str
    difference: Difference | None = None
    source_digest_differs: bool | None = None


Runner = Callable[[Progress | None], StudyResult]


def check_results(
    path: Path,
    *,
    result: StudyResult | None = None,
    run: Runner | None = None,
    progress: Progress | None = None,
) -> CheckOutcome:
    """Recompute and compare the bytes with the file at ``path``.

    ``run`` recomputes (default: :func:`run_model`); pass ``result`` to compare an
    already computed result instead.
    """
    try:
        found = path.read_bytes()
    except OSError as exc:
        return CheckOutcome(False, f"FAILED: cannot read {path}: {exc.strerror or exc}")
    fresh = result if result is not None else (run or run_model)(progress)
    expected = render_results(fresh)
    if found == expected:
        return CheckOutcome(
            True,
            f"OK {path}: byte-identical to a fresh {fresh.mode} run "
            f"({len(expected)} bytes, source digest {fresh.source_digest})",
            source_digest_differs=False,
        )
    difference = first_difference(expected, found)
    differs = _digest_differs(found, fresh.source_digest)
    return CheckOutcome(False, _mismatch_message(path, difference, differs, fresh), difference, differs)


def first_difference(expected: bytes, found: bytes) -> Difference:
    """Locate the first differing byte and quote the line it is on, both ways."""
    limit = min(len(expected), len(found))
    offset = next((i for i in range(limit) if expected[i] != found[i]), limit)
    line = expected.count(b"\n", 0, offset) + 1
    return Difference(line, offset, _line_at(expected, offset), _line_at(found, offset))


def _line_at(data: bytes, offset: int) -> str:
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    text = data[start : end if end != -1 else len(data)]
    return text.decode("utf-8", errors="replace").strip() or "<end of file>"


def _digest_differs(found: bytes, current: str) -> bool | None:
    try:
        shipped = json.loads(found).get("source_digest")
    except (ValueError, AttributeError):
        return None
    return None if not isinstance(shipped, str) else shipped != current


def _mismatch_message(path: Path, difference: Difference, differs: bool | None, fresh: StudyResult) -> str:
    where = (
        f"FAILED {path}: differs from a fresh {fresh.mode} run at line {difference.line} "
        f"(byte {difference.offset}): expected {difference.expected!r}, found {difference.found!r}."
    )
    if differs is None:
        return f"{where} The file has no readable source_digest."
    if differs:
        return (
            f"{where} The source digest differs: the file was produced by other study "
            f"source (current source digest {fresh.source_digest}); regenerate it."
        )
    return f"{where} The source digest is the same, so the file was changed after it was made."
