"""The issue's story, end to end, with a small Python project as the artifacts.

An agent changes a module and submits it; the verifier runs pytest on the candidate
tree. A buggy first version is signed `fail` and the completion is refused
`evidence_failed`. The fix is signed `pass`, but meanwhile a human edits files the agent
declared as dependencies: the completion is refused `dependency_stale`. The agent
rebases onto the human's revisions, resubmits, the verifier re-runs, and the completion
is accepted — publishing exactly the verified bytes.
"""

from __future__ import annotations

import pytest

from studiolo._exceptions import CompletionRejected
from studiolo.core.model import ReceiptResult
from tests.verifier.conftest import MakeRunner, admit
from tests.world import World

PYPROJECT = b'[tool.pytest.ini_options]\npythonpath = ["src"]\n'
CONFIG_V1 = b'"""Shop settings."""\nTAX_RATE_PERCENT = 20\n'
CONFIG_V2 = b'"""Shop settings (the tax is now called VAT)."""\nVAT_PERCENT = 25\n'
CORE_V0 = b"def gross(net_cents: int) -> int:\n    raise NotImplementedError\n"
TEST_V1 = b"""from calc.config import TAX_RATE_PERCENT
from calc.core import gross


def test_zero() -> None:
    assert gross(0) == 0


def test_rate() -> None:
    assert gross(1000) == 1000 + 10 * TAX_RATE_PERCENT
"""
TEST_V2 = TEST_V1.replace(b"TAX_RATE_PERCENT", b"VAT_PERCENT")
BUGGY = b"""from calc.config import TAX_RATE_PERCENT


def gross(net_cents: int) -> int:
    return net_cents * (100 + TAX_RATE_PERCENT) // 10
"""
FIXED = BUGGY.replace(b"// 10\n", b"// 100\n")
REBASED = FIXED.replace(b"TAX_RATE_PERCENT", b"VAT_PERCENT")


def _project(world: World) -> None:
    for path, data in {
        "pyproject.toml": PYPROJECT,
        "src/calc/__init__.py": b"",
        "src/calc/config.py": CONFIG_V1,
        "src/calc/core.py": CORE_V0,
        "tests/test_core.py": TEST_V1,
    }.items():
        world.edit(path, data)


def _deps(world: World) -> dict[str, int]:
    read = world.coord.read_revision
    return {p: read(world.agent, world.project_id, p) for p in ("src/calc/config.py", "tests/test_core.py")}


def test_pytest_verifier_story(world: World, make_runner: MakeRunner) -> None:
    _project(world)
    checker = admit(world, "pytest", "pytest", {"args": ["tests"], "timeout": 60})
    task = world.new_task("compute the gross price", criteria={"tests": checker})
    attempt = world.coord.claim(world.agent, task.id)
    runner = make_runner()

    # 1. A buggy module: the verifier signs a failure; the completion is refused.
    buggy = world.candidate(attempt, {"src/calc/core.py": BUGGY}, deps=_deps(world))
    [report] = runner.run_once()
    assert (report.status, report.candidate_id) == ("fail", buggy.id)
    assert "1 failed, 1 passed" in report.summary
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, buggy, [report.receipt_id or ""])
    assert refused.value.failed == ("evidence_failed",)

    # 2. The fix passes; but a human edits the declared dependencies before completion.
    deps = _deps(world)
    fixed = world.candidate(attempt, {"src/calc/core.py": FIXED}, deps=deps)
    [passed] = runner.run_once()
    assert (passed.status, passed.summary) == ("pass", "2 passed")
    world.edit("src/calc/config.py", CONFIG_V2)
    world.edit("tests/test_core.py", TEST_V2)
    with pytest.raises(CompletionRejected) as stale:
        world.complete(task, attempt, fixed, [passed.receipt_id or ""])
    assert stale.value.failed == ("dependency_stale",)

    # The signed pass is about the declared revisions, not today's files: the log says so.
    receipt = world.coord.receipt(world.agent, passed.receipt_id or "")
    log = world.coord.get_blob(world.agent, receipt.log_digest or "").decode()
    assert f"src/calc/config.py @ declared r{deps['src/calc/config.py']}" in log
    assert "src/calc/core.py @ candidate" in log

    # 3. Rebase onto the human's revisions, resubmit, re-verify, complete.
    rebased = world.candidate(attempt, {"src/calc/core.py": REBASED}, deps=_deps(world))
    [again] = runner.run_once()
    assert (again.status, again.candidate_id) == ("pass", rebased.id)
    outcome = world.complete(task, attempt, rebased, [again.receipt_id or ""])
    published = world.coord.read_artifact(world.agent, world.project_id, "src/calc/core.py")
    assert published.data == REBASED
    assert outcome.completion.revisions == {"src/calc/core.py": published.artifact.revision}

    # Nothing is left to verify, and every request and result is in the events stream.
    assert runner.run_once() == []
    kinds = [e.kind for e in world.coord.events(world.admin, world.project_id, limit=1000)]
    assert kinds.count("verification.requested") == 3
    assert kinds.count("receipt.recorded") == 3
    assert kinds[-1] == "completion.accepted"
    results = [r.result for r in world.coord.receipts(world.agent, rebased.id)]
    assert results == [ReceiptResult.PASS]
