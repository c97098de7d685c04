"""The runner: what it signs, what it refuses to sign, and how it survives bad checkers."""

from __future__ import annotations

import os
import pwd
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo.core.model import Attempt, FileMode, ReceiptResult, Task
from studiolo.keys import verify
from studiolo.service.verification import CandidateTree, VerificationItem
from studiolo.verifier import Checker, CheckOutcome, InProcessPort, Limits, Sandbox
from studiolo.verifier.checkers import registry
from studiolo.verifier.tree import remove_tree
from tests.verifier.conftest import MakeRunner, admit
from tests.world import World


def _claim(world: World, checker: str, **kw: Any) -> tuple[Task, Attempt]:
    task = world.new_task(criteria={"tests": checker}, **kw)
    return task, world.coord.claim(world.agent, task.id)


def test_a_pass_is_signed_logged_and_completes(world: World, make_runner: MakeRunner) -> None:
    task, attempt = _claim(world, "unit@1")
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    [report] = make_runner().run_once()
    assert report.status == "pass" and report.receipt_id
    receipt = world.coord.receipt(world.agent, report.receipt_id)
    assert receipt.issued_at == int(world.clock() * 1000)
    assert verify(world.verifier.public_key or "", receipt.signed_body(), receipt.signature)
    log = world.coord.get_blob(world.agent, receipt.log_digest or "").decode()
    assert log.startswith("studiolo verifier log v1\nchecker: unit@1 (kind command), criterion tests\n")
    assert f"candidate: {cand.id} {cand.digest}" in log
    assert "src/input.txt @ declared r1" in log and "src/answer.txt @ candidate" in log
    world.complete(task, attempt, cand, [report.receipt_id])


def test_the_tree_is_the_declared_one(world: World, make_runner: MakeRunner) -> None:
    """Declared dependencies at their declared revisions, deletions applied, candidate on top."""
    script = "grep -qx 21 src/input.txt && test ! -e src/answer.txt && grep -qx new src/new.txt"
    checker = admit(world, "shape", "command", {"argv": ["/bin/sh", "-c", script]})
    _task, attempt = _claim(world, checker)
    world.candidate(attempt, {"src/answer.txt": None, "src/new.txt": b"new\n"}, deps={"src/input.txt": 1})
    world.edit("src/input.txt", b"22\n")  # moves on; the candidate declared r1
    [report] = make_runner().run_once()
    assert report.status == "pass", report.summary


def test_the_checker_sees_the_candidates_executable_bit(world: World, make_runner: MakeRunner) -> None:
    """A 100755 path is executable in the tree the checker runs in (and 100644 is not, even
    where the same bytes are linked); the receipt binds the digest that includes the mode."""
    checker = admit(
        world, "modes", "command", {"argv": ["/bin/sh", "-c", "./src/run.sh && test ! -x src/same.sh"]}
    )
    task, attempt = _claim(world, checker)
    script = b"#!/bin/sh\nexit 0\n"
    files = {"src/run.sh": script, "src/same.sh": script}
    cand = world.candidate(attempt, files, modes={"src/run.sh": FileMode.EXECUTABLE})
    [report] = make_runner().run_once()
    assert report.status == "pass", report.summary
    world.complete(task, attempt, cand, [report.receipt_id or ""])


def test_a_timeout_is_a_clear_failed_receipt(world: World, make_runner: MakeRunner) -> None:
    checker = admit(world, "slow", "command", {"argv": ["sleep", "60"], "timeout": 0.5})
    task, attempt = _claim(world, checker)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner().run_once()
    assert report.status == "fail" and report.seconds < 10
    assert report.summary.startswith("timed out after 0.5s")
    receipt = world.coord.receipt(world.agent, report.receipt_id or "")
    assert receipt.result is ReceiptResult.FAIL
    assert b"timed out" in world.coord.get_blob(world.agent, receipt.log_digest or "")
    with pytest.raises(Exception, match="evidence_failed"):
        world.complete(task, attempt, cand, [receipt.id])


@pytest.mark.parametrize("target", ["src/answer.txt", "new.txt", "../escaped.txt"])
def test_writing_outside_the_scratch_directory_is_refused(
    world: World, make_runner: MakeRunner, target: str
) -> None:
    script = f"echo scratch > $TMPDIR/ok; echo pwned > {target}; exit 0"
    checker = admit(world, "sneaky", "command", {"argv": ["/bin/sh", "-c", script]})
    _task, attempt = _claim(world, checker)
    world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner().run_once()
    receipt = world.coord.receipt(world.agent, report.receipt_id or "")
    log = world.coord.get_blob(world.agent, receipt.log_digest or "")
    assert b"Read-only file system" in log
    assert report.status == "pass"  # the check ran on the intact tree and said so


@pytest.mark.parametrize("target", ["src/answer.txt", "new.txt", "../escaped.txt"])
def test_unisolated_writes_outside_the_scratch_directory_fail_the_check(
    world: World, make_runner: MakeRunner, target: str
) -> None:
    script = f"echo scratch > $TMPDIR/ok; echo pwned > {target}; exit 0"
    checker = admit(world, "sneaky", "command", {"argv": ["/bin/sh", "-c", script]})
    _task, attempt = _claim(world, checker)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner(unsafe_no_isolation=True).run_once()
    assert report.status == "fail"
    if os.geteuid() == 0:  # permissions do not stop root: the digest comparison does
        assert report.summary.startswith("checker modified its input")
    assert [r.result for r in world.coord.receipts(world.agent, cand.id)] == [ReceiptResult.FAIL]


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")
def test_unisolated_a_root_verifier_can_run_checkers_as_an_unprivileged_user(
    world: World, make_runner: MakeRunner
) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="studiolo-test-"))  # root's, traversable by nobody
    outside = workdir / "outside.txt"
    script = f"echo scratch > $TMPDIR/ok && cat src/input.txt && echo pwned > {outside}"
    checker = admit(world, "sneaky", "command", {"argv": ["/bin/sh", "-c", script]})
    _task, attempt = _claim(world, checker)
    world.candidate(attempt, {"src/answer.txt": b"42\n"})
    nobody = pwd.getpwnam("nobody")
    try:
        workdir.chmod(0o711)
        limits = Limits(timeout=30, run_as=(nobody.pw_uid, nobody.pw_gid))
        [report] = make_runner(limits=limits, workdir=workdir, unsafe_no_isolation=True).run_once()
        assert not outside.exists()
    finally:
        remove_tree(workdir)
    assert report.status == "fail" and report.summary.startswith("exit code")
    receipt = world.coord.receipt(world.agent, report.receipt_id or "")
    log = world.coord.get_blob(world.agent, receipt.log_digest or "")
    assert b"21\n" in log and b"Permission denied" in log


def test_a_misconfigured_checker_yields_a_failed_receipt(world: World, make_runner: MakeRunner) -> None:
    checker = admit(world, "broken", "command", {"argv": []})
    _task, attempt = _claim(world, checker)
    world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner().run_once()
    assert (report.status, report.summary) == ("fail", "misconfigured: command config 'argv' is empty")


def test_an_unknown_kind_is_skipped_once_and_signed_never(world: World, make_runner: MakeRunner) -> None:
    checker = admit(world, "exotic", "fortran", {})
    _task, attempt = _claim(world, checker)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    runner = make_runner()
    [report] = runner.run_once()
    assert report.status == "skipped" and "no checker kind 'fortran'" in report.summary
    assert runner.run_once() == []
    assert world.coord.receipts(world.agent, cand.id) == []


def test_a_moved_collection_dependency_is_not_signed(world: World, make_runner: MakeRunner) -> None:
    _task, attempt = _claim(world, "unit@1")
    src = world.coord.collection_revision(world.agent, world.project_id, "src/")
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"}, collections={"src/": src})
    world.edit("src/other.txt", b"new file\n")
    [report] = make_runner().run_once()
    assert report.status == "skipped" and "src/" in report.summary
    assert world.coord.receipts(world.agent, cand.id) == []


def test_a_new_kind_is_a_small_class(world: World, make_runner: MakeRunner) -> None:
    class LineCount(Checker):
        kind = "line-count"

        def run(self, tree: Path, config: Mapping[str, Any], sandbox: Sandbox) -> CheckOutcome:
            lines = len((tree / config["path"]).read_bytes().splitlines())
            return CheckOutcome(lines <= config["max"], f"{lines} lines\n".encode(), f"{lines} lines")

    checker = admit(world, "short", "line-count", {"path": "src/answer.txt", "max": 1})
    _task, attempt = _claim(world, checker)
    world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner(checkers=registry([LineCount()])).run_once()
    assert (report.status, report.summary) == ("pass", "1 lines")


class _LyingPort(InProcessPort):
    """A compromised or buggy service: it lies about the tree or the work item."""

    def __init__(self, world: World, lie: str) -> None:
        super().__init__(world.coord, world.verifier, world.project_id)
        self.lie = lie

    def work(self, limit: int = 100) -> list[VerificationItem]:
        items = super().work(limit)
        if self.lie == "modes":
            return [i.model_copy(update={"modes": {}}) for i in items]
        if self.lie == "item":
            return [
                i.model_copy(update={"files": {**i.files, "src/answer.txt": i.files["src/input.txt"]}})
                for i in items
            ]
        return items

    def tree(self, candidate_id: str) -> CandidateTree:
        spec = super().tree(candidate_id)
        if self.lie == "tree":
            return spec.model_copy(
                update={
                    "entries": tuple(
                        e.model_copy(update={"digest": spec.entries[0].digest}) for e in spec.entries
                    )
                }
            )
        return spec

    def blob(self, digest: str) -> bytes:
        return b"lies\n" if self.lie == "blob" else super().blob(digest)


@pytest.mark.parametrize("lie", ["item", "tree", "blob", "modes"])
def test_the_verifier_signs_nothing_it_cannot_vouch_for(
    world: World, make_runner: MakeRunner, lie: str
) -> None:
    _task, attempt = _claim(world, "unit@1")
    files = {"src/answer.txt": b"42\n", "src/input.txt": b"21\n"}
    cand = world.candidate(attempt, files, modes={"src/answer.txt": FileMode.EXECUTABLE})
    [report] = make_runner(port=_LyingPort(world, lie)).run_once()
    assert report.status == "error" and "IntegrityError" in report.summary
    assert world.coord.receipts(world.agent, cand.id) == []


def test_a_rejected_receipt_is_an_error_not_a_crash(world: World, make_runner: MakeRunner) -> None:
    _task, attempt = _claim(world, "unit@1")
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner(key=Ed25519PrivateKey.generate()).run_once()
    assert report.status == "error" and "[signature_invalid]" in report.summary
    assert world.coord.receipts(world.agent, cand.id) == []


def test_run_forever_polls_until_stopped(world: World, make_runner: MakeRunner) -> None:
    _task, attempt = _claim(world, "unit@1")
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    lines: list[str] = []
    stop = threading.Event()

    def echo(line: str) -> None:
        lines.append(line)
        stop.set()

    thread = threading.Thread(target=make_runner(echo=echo).run_forever, args=(0.05, stop))
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert lines and lines[0].startswith(f"pass    {cand.id} tests (unit@1)")


def test_verification_requests_are_events(world: World) -> None:
    world.coord.register_checker(
        world.admin, world.project_id, "lint", "1", "command", {}, [world.verifier.id]
    )
    task = world.new_task(criteria={"tests": "unit@1", "style": "lint@1"})
    attempt = world.coord.claim(world.agent, task.id)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    requested = [
        e for e in world.coord.events(world.admin, world.project_id) if e.kind == "verification.requested"
    ]
    assert [(e.subject, e.data["criterion"], e.data["checker"]) for e in requested] == [
        (cand.id, "style", "lint@1"),
        (cand.id, "tests", "unit@1"),
    ]
    assert {e.data["candidate_digest"] for e in requested} == {cand.digest}


# A tree that cannot be built because of the project's state is no verdict on the candidate
# (issue 32, finding 3): it was a signed `fail`, and a fail receipt is never erased.


def test_a_file_written_where_the_candidate_needs_a_directory_is_not_a_fail(
    world: World, make_runner: MakeRunner
) -> None:
    task, attempt = _claim(world, "unit@1")
    cand = world.candidate(attempt, {"src/out/report.txt": b"ok\n"})
    world.edit("src/out", b"another writer's file\n")  # after the candidate: the door cannot refuse it
    runner = make_runner(retry_seconds=30.0)
    [report] = runner.run_once()
    assert report.status == "error" and "not a verdict" in report.summary, report.summary
    assert world.coord.receipts(world.agent, cand.id) == []
    assert runner.run_once() == []  # not before its retry time
    world.edit("src/out", None)
    world.clock.advance(31)
    [report] = runner.run_once()
    assert report.status == "pass" and report.receipt_id, report.summary
    world.complete(task, attempt, cand, [report.receipt_id])


def test_a_project_tree_an_older_server_let_conflict_is_not_a_fail(
    world: World, make_runner: MakeRunner
) -> None:
    digest = world.put(b"planted\n")  # `PUT src/input.txt/x` as the finding did it, before the fix
    world.coord.store.write(
        lambda tx: tx.content.write_artifact(world.project_id, "src/input.txt/x", digest, 0.0, "x", "edit")
    )
    _task, attempt = _claim(world, "unit@1")
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"})
    [report] = make_runner().run_once()
    assert report.status == "error" and "both a file and a directory" in report.summary
    assert world.coord.receipts(world.agent, cand.id) == []


@pytest.mark.parametrize(("own", "status"), [(b"x" * 10, "error"), (b"x" * 5000, "fail")])
def test_only_the_candidates_own_bytes_can_be_too_large_for_a_verdict(
    world: World, make_runner: MakeRunner, own: bytes, status: str
) -> None:
    world.edit("docs/big.bin", b"y" * 5000)  # the project's bytes: not the candidate's doing
    _task, attempt = _claim(world, "unit@1")
    cand = world.candidate(attempt, {"src/answer.txt": own})
    [report] = make_runner(limits=Limits(timeout=60.0, tree_bytes=4000)).run_once()
    assert report.status == status, report.summary
    assert len(world.coord.receipts(world.agent, cand.id)) == (status == "fail")
