"""Issue 32, finding 2: a candidate forges the pytest checker's verdict.

The attack: tests in `tests/` (outside the task's scope), the candidate's `src/calc.py`
returns 0 for `double(x)` and, when the tests import it, writes a passing JUnit report to
the `--junitxml` path it finds in `sys.argv`, then `os._exit(0)`. Before the fix the
checker signed `pass` and the completion was accepted.

Now (a) every receipt says, signed, whether its verdict was computed where the candidate's
code ran, and a contract can require that it was not; (b) the `outputs` kind computes its
verdict in a second sandbox that holds no candidate code; (c) the pytest kind no longer
offers a report path to forge."""

from __future__ import annotations

from typing import Any

import pytest

from studiolo._exceptions import CompletionRejected
from studiolo.core.canonical import digest_bytes
from studiolo.core.model import ReceiptResult, VerdictIsolation
from studiolo.keys import sign
from tests.verifier.conftest import MakeRunner, admit
from tests.world import World

TESTS = b"""
import sys
sys.path.insert(0, "src")
from calc import double

def test_double():
    assert double(2) == 4
    assert double(-3) == -6
"""

HONEST = b"def double(x):\n    return 2 * x\n"

# The red team's candidate: wrong, and forging pytest's JUnit report before pytest can write it.
FORGER = b"""
import os, sys

def double(x):
    return 0

_argv = sys.argv
_path = _argv[_argv.index("--junitxml") + 1] if "--junitxml" in _argv else None
if _path is None:
    _path = next((a.split("=", 1)[1] for a in _argv if a.startswith("--junitxml=")), None)
if _path:
    with open(_path, "w") as f:
        f.write('<testsuites><testsuite name="pytest" tests="1" failures="0" errors="0" skipped="0">'
                '<testcase classname="tests.test_calc" name="test_double"/></testsuite></testsuites>')
    sys.stdout.write("1 passed in 0.01s\\n")
    sys.stdout.flush()
    os._exit(0)
"""

# Stage 1 of the `outputs` kind: the harness (outside the scope) calls the candidate's code
# and writes what it returns. Stage 2 judges those numbers where no candidate code exists.
EMIT = b"""
import json, os, sys
sys.path.insert(0, "src")
from calc import double
with open(os.path.join(os.environ["STUDIOLO_OUTPUTS"], "answers.json"), "w") as f:
    json.dump({str(x): double(x) for x in (2, -3, 10)}, f)
"""
CHECK = b"""
import json, os, sys
answers = json.load(open(os.path.join(os.environ["STUDIOLO_OUTPUTS"], "answers.json")))
wrong = {x: got for x, got in answers.items() if got != 2 * int(x)}
print("wrong:", wrong)
sys.exit(1 if wrong or len(answers) != 3 else 0)
"""

# A candidate that attacks the `outputs` kind the same way: forge what it can find, exit 0.
OUTPUTS_FORGER = b"""
import glob, os
def double(x):
    return 0
for path in glob.glob("/**/*.tar", recursive=True) + glob.glob("/**/*report*", recursive=True):
    try:
        open(path, "w").write("pass")
    except OSError:
        pass
os._exit(0)
"""


def _project(world: World) -> None:
    world.edit("tests/test_calc.py", TESTS)
    world.edit("tests/emit.py", EMIT)
    world.edit("tests/check_calc.py", CHECK)


def _outputs_checker(world: World) -> str:
    config = {
        "run": ["python3", "tests/emit.py"],
        "assert": ["python3", "tests/check_calc.py"],
        "assertions": {"tests/check_calc.py": digest_bytes(CHECK)},
        "timeout": 60,
    }
    return admit(world, "calc", "outputs", config)


def _verify(world: World, make_runner: MakeRunner, checker: str, calc: bytes, **task: Any) -> Any:
    _project(world)
    t = world.new_task(criteria={"tests": checker}, scope=["src/**"], **task)
    attempt = world.coord.claim(world.agent, t.id)
    cand = world.candidate(attempt, {"src/calc.py": calc})
    [report] = make_runner().run_once()
    return t, attempt, cand, report


def test_the_forged_junit_report_no_longer_passes_pytest(world: World, make_runner: MakeRunner) -> None:
    checker = admit(world, "pytest", "pytest", {"args": ["tests/test_calc.py"]})
    task, attempt, cand, report = _verify(world, make_runner, checker, FORGER)
    assert report.status == "fail", report.summary
    with pytest.raises(CompletionRejected, match="evidence_failed"):
        world.complete(task, attempt, cand, [report.receipt_id])


def test_a_pytest_pass_is_signed_shared_and_refused_where_a_separate_verdict_is_required(
    world: World, make_runner: MakeRunner
) -> None:
    checker = admit(world, "pytest", "pytest", {"args": ["tests/test_calc.py"]})
    task, attempt, cand, report = _verify(world, make_runner, checker, HONEST, separate_verdict=["tests"])
    assert report.status == "pass", report.summary
    receipt = world.coord.receipt(world.agent, report.receipt_id)
    assert receipt.verdict_isolation is VerdictIsolation.SHARED
    assert receipt.signed_body()["verdict_isolation"] == "shared"
    assert task.contract.to_json()["separate_verdict"] == ["tests"]
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, cand, [report.receipt_id])
    assert refused.value.failed[:2] == ("evidence_not_separate", "evidence_missing")


def test_the_outputs_kind_cannot_be_forged_and_passes_honest_work(
    world: World, make_runner: MakeRunner
) -> None:
    checker = _outputs_checker(world)
    task, attempt, cand, report = _verify(
        world, make_runner, checker, OUTPUTS_FORGER, separate_verdict=["tests"]
    )
    assert report.status == "fail", report.summary
    with pytest.raises(CompletionRejected, match="evidence_failed"):
        world.complete(task, attempt, cand, [report.receipt_id])

    honest = world.candidate(attempt, {"src/calc.py": HONEST})
    [good] = make_runner().run_once()
    assert good.candidate_id == honest.id and good.status == "pass", good.summary
    receipt = world.coord.receipt(world.agent, good.receipt_id or "")
    assert receipt.verdict_isolation is VerdictIsolation.SEPARATE
    log = world.coord.get_blob(world.agent, receipt.log_digest or "")
    assert b"--- assertions (no candidate code) ---" in log
    assert world.complete(task, attempt, honest, [receipt.id]).completion is not None


def test_outputs_refuses_assertion_files_the_candidate_changed(world: World, make_runner: MakeRunner) -> None:
    checker = _outputs_checker(world)
    _project(world)
    task = world.new_task(criteria={"tests": checker}, scope=["src/**", "tests/**"])
    attempt = world.coord.claim(world.agent, task.id)
    lenient = b"import sys; sys.exit(0)\n"
    world.candidate(attempt, {"src/calc.py": FORGER, "tests/check_calc.py": lenient})
    [report] = make_runner().run_once()
    assert report.status == "fail" and "not the pinned bytes" in report.summary


def test_receipts_without_verdict_isolation_stay_valid_and_count_as_shared(world: World) -> None:
    """Receipts signed before receipts said where the verdict was computed keep their id and
    signature, and count as they did — except for a criterion that requires a separate one."""
    plain = world.new_task()
    attempt = world.coord.claim(world.agent, plain.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    old = world.receipt(cand)  # the eleven keys of before
    assert "verdict_isolation" not in old.signed_body() and old.verdict_isolation is None
    assert world.complete(plain, attempt, cand, [old.id]).completion is not None

    strict = world.new_task("strict", separate_verdict=["tests"])
    attempt = world.coord.claim(world.agent, strict.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"43\n"})
    with pytest.raises(CompletionRejected, match="evidence_not_separate"):
        world.complete(strict, attempt, cand, [world.receipt(cand).id])
    separate = world.receipt(cand, verdict_isolation="separate")
    assert world.complete(strict, attempt, cand, [separate.id]).completion is not None


def test_the_verdict_isolation_is_signed(world: World) -> None:
    task = world.new_task(separate_verdict=["tests"])
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    body = world.receipt(cand, verdict_isolation="shared").signed_body()
    forged = dict(body, verdict_isolation="separate", issued_at=body["issued_at"] + 1)
    with pytest.raises(Exception, match="signature"):
        world.coord.submit_receipt(world.verifier, cand.id, forged, sign(world.verifier_key, body))


def test_a_failed_shared_receipt_still_counts_against_a_separate_criterion(world: World) -> None:
    task = world.new_task(separate_verdict=["tests"])
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    world.receipt(cand, result="fail")  # shared, uncited
    passed = world.receipt(cand, verdict_isolation="separate")
    assert passed.result is ReceiptResult.PASS
    with pytest.raises(CompletionRejected, match="evidence_failed"):
        world.complete(task, attempt, cand, [passed.id])


def test_older_contracts_keep_their_hash(world: World) -> None:
    task = world.new_task()
    assert "separate_verdict" not in task.contract.to_json()
    assert task.contract_hash == task.contract.hash


def test_without_isolation_every_verdict_is_signed_shared(world: World, make_runner: MakeRunner) -> None:
    """Unisolated, the candidate's processes may outlive stage 1 and share the uid: nothing
    keeps them from the verdict, so even `outputs` signs `shared`."""
    checker = _outputs_checker(world)
    _project(world)
    task = world.new_task(criteria={"tests": checker}, scope=["src/**"], separate_verdict=["tests"])
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/calc.py": HONEST})
    [report] = make_runner(unsafe_no_isolation=True).run_once()
    assert report.status == "pass", report.summary
    assert (
        world.coord.receipt(world.agent, report.receipt_id or "").verdict_isolation is VerdictIsolation.SHARED
    )
    with pytest.raises(CompletionRejected, match="evidence_not_separate"):
        world.complete(task, attempt, cand, [report.receipt_id or ""])
