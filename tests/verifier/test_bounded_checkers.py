"""Issue 32, finding 4: every checker kind runs isolated and bounded; a checker's failure is a
receipt (or a clear error status), never the verifier's crash or hang.

Before the fix `json-schema` parsed and validated in the verifier's own process: a JSON file
nested 200,000 deep raised RecursionError out of `run_once` (and again after every restart),
and a schema pattern that backtracks forever hung the verifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studiolo.core.model import ReceiptResult
from studiolo.verifier import Checker, CheckOutcome, Limits, Sandbox
from studiolo.verifier.checkers import registry
from tests.verifier.conftest import MakeRunner, admit
from tests.world import World


def _check(world: World, make_runner: MakeRunner, checker: str, files: dict[str, bytes], **kw: Any) -> Any:
    task = world.new_task(criteria={"tests": checker}, scope=["src/**", "data/**"])
    attempt = world.coord.claim(world.agent, task.id)
    world.candidate(attempt, files)
    [report] = make_runner(**kw).run_once()
    return report


def test_a_json_document_nested_200000_deep_is_a_failed_receipt(
    world: World, make_runner: MakeRunner
) -> None:
    checker = admit(world, "shape", "json-schema", {"schema": {"type": "array"}, "files": ["data/*.json"]})
    deep = b"[" * 200_000 + b"]" * 200_000
    report = _check(world, make_runner, checker, {"data/deep.json": deep})
    assert report.status == "fail", report.summary
    receipt = world.coord.receipt(world.agent, report.receipt_id)
    assert receipt.result is ReceiptResult.FAIL
    assert b"data/deep.json: not JSON" in world.coord.get_blob(world.agent, receipt.log_digest or "")


def test_a_schema_pattern_that_backtracks_forever_times_out_as_a_failed_receipt(
    world: World, make_runner: MakeRunner
) -> None:
    schema = {"type": "string", "pattern": "^(a+)+$"}
    config = {"schema_path": "data/schema.json", "files": ["data/value.json"], "timeout": 2}
    checker = admit(world, "evil", "json-schema", config)
    files = {"data/schema.json": json.dumps(schema).encode(), "data/value.json": b'"' + b"a" * 40 + b'!"'}
    report = _check(world, make_runner, checker, files)
    assert report.status == "fail" and report.summary.startswith("timed out after 2.0s"), report.summary


def test_a_huge_json_file_meets_the_checks_memory_limit(world: World, make_runner: MakeRunner) -> None:
    checker = admit(world, "shape", "json-schema", {"schema": {"type": "array"}, "files": ["data/*.json"]})
    big = b"[" + b",".join([b"[1,2,3,4,5,6,7,8]"] * 400_000) + b"]"  # 7 MB of text, far more as objects
    limits = Limits(timeout=60.0, memory_bytes=64 * 1024 * 1024)
    report = _check(world, make_runner, checker, {"data/big.json": big}, limits=limits)
    assert report.status == "fail", report.summary


class _Broken(Checker):
    kind = "command"

    def run(self, tree: Path, config: Any, sandbox: Sandbox) -> CheckOutcome:
        raise RecursionError("maximum recursion depth exceeded")


def test_a_checker_kind_that_raises_is_an_error_status_not_a_crash(
    world: World, make_runner: MakeRunner
) -> None:
    report = _check(world, make_runner, "unit@1", {"src/answer.txt": b"42\n"}, checkers=registry([_Broken()]))
    assert report.status == "error" and report.receipt_id is None
    assert "RecursionError" in report.summary
