"""The verifier loop: take work, materialize the candidate, run the checker, keep the log,
sign the receipt, post it.

A receipt is signed only for a check that actually ran on a tree the verifier built and
verified itself: the candidate and dependency digests it signs are recomputed here from
the candidate's manifest, every blob is checked against its digest, and the tree is
sealed read-only and compared after the run. When the declared inputs cannot be
reproduced, or the verifier itself fails, it signs nothing (`skipped` / `error`).

A tree that cannot be built because of the project's state (a path that the project's
files, or the candidate's files over them, make both a file and a directory; a project too
large for this verifier) is no verdict on the candidate's bytes: it is an `error`, signed
never, and the item is tried again after `retry_seconds`. Only the candidate's own files
failing on their own (two of them conflicting, or too large alone) are a `fail`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from studiolo._exceptions import BytesDeleted, StudioloError
from studiolo.api.verification import CandidateTree, VerificationItem
from studiolo.core.canonical import digest_bytes, digest_json
from studiolo.core.enums import VerdictIsolation
from studiolo.core.model import candidate_digest
from studiolo.core.paths import file_dir_conflicts
from studiolo.keys import sign
from studiolo.verifier.checkers import Checker, CheckerConfigError, CheckOutcome, registry
from studiolo.verifier.isolation import Isolation
from studiolo.verifier.port import VerifierPort
from studiolo.verifier.sandbox import Limits, Sandbox, Workspace
from studiolo.verifier.tree import IntegrityError, TreeConflict, TreeTooLarge, materialize

__all__ = ["ItemReport", "Runner"]


@dataclass(frozen=True)
class ItemReport:
    candidate_id: str
    criterion: str
    checker: str
    status: str  # "pass" | "fail" (a receipt was posted) | "skipped" | "error" (none was)
    summary: str
    receipt_id: str | None = None
    seconds: float = 0.0

    def line(self) -> str:
        rid = f" {self.receipt_id}" if self.receipt_id else ""
        return (
            f"{self.status:7} {self.candidate_id} {self.criterion} ({self.checker}) "
            f"{self.seconds:.2f}s: {self.summary}{rid}"
        )


class _Skip(Exception):
    """Nothing to sign: the declared inputs cannot be reproduced or this verifier cannot run the kind."""


class _NotAVerdict(Exception):
    """Nothing to sign now: the tree cannot be built because of the project's state."""


class Runner:
    def __init__(
        self,
        port: VerifierPort,
        key: Ed25519PrivateKey,
        *,
        checkers: Mapping[str, Checker] | None = None,
        limits: Limits | None = None,
        workdir: Path | None = None,
        isolation: Isolation | None = None,
        unsafe_no_isolation: bool = False,
        clock: Callable[[], float] = time.time,
        echo: Callable[[str], None] = lambda _line: None,
        retry_seconds: float = 60.0,
    ) -> None:
        self.port = port
        self.key = key
        self.checkers = dict(checkers) if checkers is not None else registry()
        self.limits = limits or Limits()
        # Checks run isolated unless the caller explicitly asks otherwise; a machine that
        # cannot isolate raises IsolationUnavailable here, before any work is taken.
        self.isolation = None if unsafe_no_isolation else isolation or Isolation.probe(self.limits.run_as)
        self.workdir = workdir
        # trees left by a verifier killed mid-check (none younger than one check may last)
        Workspace.remove_stale(workdir, older_than=self.limits.timeout + 60)
        self.clock = clock
        self.echo = echo
        self._passed_over: set[tuple[str, str]] = set()  # (candidate, criterion) skipped for good
        self.retry_seconds = retry_seconds
        self._retry_at: dict[tuple[str, str], float] = {}  # (candidate, criterion) → when to retry

    # the loop ----------------------------------------------------------------
    def run_once(self, limit: int = 100) -> list[ItemReport]:
        """Process the current queue once. Errors reaching the service propagate."""
        now = self.clock()
        items = [i for i in self.port.work(limit) if self._due((i.candidate_id, i.criterion), now)]
        return [self._report(self.verify(item)) for item in items]

    def _due(self, key: tuple[str, str], now: float) -> bool:
        return key not in self._passed_over and self._retry_at.get(key, now) <= now

    def run_forever(self, poll_seconds: float = 5.0, stop: threading.Event | None = None) -> None:
        """Poll until `stop` is set; a failed poll is reported and retried, never fatal."""
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                done = self.run_once()
            except (StudioloError, OSError) as exc:
                self.echo(f"poll failed: {exc}")
                done = []
            if not done:
                stop.wait(poll_seconds)

    def _report(self, report: ItemReport) -> ItemReport:
        if report.status == "skipped":
            self._passed_over.add((report.candidate_id, report.criterion))
        self.echo(report.line())
        return report

    # one item ----------------------------------------------------------------
    def verify(self, item: VerificationItem) -> ItemReport:
        start = time.monotonic()
        self._retry_at.pop((item.candidate_id, item.criterion), None)  # due now: tried again

        def report(status: str, summary: str, rid: str | None = None) -> ItemReport:
            secs = time.monotonic() - start
            return ItemReport(item.candidate_id, item.criterion, item.checker, status, summary, rid, secs)

        try:
            checker = self._checker(item)
            spec = self._tree(item)
            outcome, log = self._check(item, checker, spec)
            rid = self._post(item, outcome, log, checker)
        except _Skip as exc:
            return report("skipped", str(exc))
        except BytesDeleted as exc:  # its bytes were deleted: nobody can check them again
            return report("skipped", f"re-verification impossible: {exc.detail}")
        except _NotAVerdict as exc:
            self._retry_at[(item.candidate_id, item.criterion)] = self.clock() + self.retry_seconds
            return report(
                "error", f"not a verdict on the candidate, retrying in {self.retry_seconds:g}s: {exc}"
            )
        except (StudioloError, IntegrityError, OSError) as exc:
            reason = f" [{exc.reason}]" if isinstance(exc, StudioloError) else ""
            return report("error", f"{type(exc).__name__}{reason}: {exc}")
        except Exception as exc:  # a checker kind's own bug: no receipt, and never the loop's end
            return report("error", f"the checker kind failed: {type(exc).__name__}: {str(exc)[:500]}")
        return report("pass" if outcome.passed else "fail", outcome.summary, rid)

    def _checker(self, item: VerificationItem) -> Checker:
        checker = self.checkers.get(item.checker_kind)
        if checker is None:
            raise _Skip(f"this verifier has no checker kind {item.checker_kind!r}")
        return checker

    def _tree(self, item: VerificationItem) -> CandidateTree:
        _check_digests(item)
        spec = self.port.tree(item.candidate_id)
        if (spec.candidate_digest, spec.dependency_digest) != (item.candidate_digest, item.dependency_digest):
            raise IntegrityError("the candidate tree does not describe the work item's candidate")
        on_top = {e.path: e.digest for e in spec.entries if e.source == "candidate"}
        deleted = {p for p, d in item.files.items() if d is None}
        wanted = {p: d for p, d in item.files.items() if d is not None}
        if on_top != wanted or any(e.path in deleted for e in spec.entries):
            raise IntegrityError("the candidate tree does not carry the candidate's files")
        if spec.unreproducible:
            raise _Skip(f"declared dependencies moved since the candidate: {list(spec.unreproducible)[:5]}")
        if spec.withheld:
            raise _Skip(f"this verifier may not read {len(spec.withheld)} path(s) of the tree")
        return spec

    def _check(
        self, item: VerificationItem, checker: Checker, spec: CandidateTree
    ) -> tuple[CheckOutcome, bytes]:
        own = _own_conflicts(spec)
        if own:
            return _unbuildable(item, spec, f"{own[0][0]} is both a file and a directory")
        with Workspace(self.workdir, self._group()) as ws:
            try:
                materialize(spec, self.port.blob, ws.tree, self.limits.tree_bytes)
            except TreeTooLarge as exc:
                if not exc.own:
                    raise _NotAVerdict(f"the tree cannot be built: {exc}") from exc
                return _unbuildable(item, spec, str(exc))
            except TreeConflict as exc:  # the project's files, or the candidate's over them
                raise _NotAVerdict(f"the tree cannot be built: {exc}") from exc
            sealed = ws.seal()
            outcome = self._run_checker(checker, item, ws)
            problems = ws.violations()
            if problems:
                note = "checker modified its input: " + "; ".join(problems)
                outcome = CheckOutcome(False, outcome.log + f"\n[{note}]\n".encode(), note)
            return outcome, _log(item, spec, sealed, outcome)

    def _group(self) -> int | None:
        """The group that may reach an unisolated check's tree (`--run-as`), else None."""
        run_as = self.limits.run_as
        return run_as[1] if self.isolation is None and run_as is not None else None

    def _run_checker(self, checker: Checker, item: VerificationItem, ws: Workspace) -> CheckOutcome:
        sandbox = Sandbox(ws, self.limits, isolation=self.isolation)
        try:
            return checker.run(ws.tree, item.checker_config, sandbox)
        except CheckerConfigError as exc:
            return CheckOutcome(False, f"checker misconfigured: {exc}\n".encode(), f"misconfigured: {exc}")

    def _isolation_of(self, checker: Checker) -> VerdictIsolation:
        """What the kind declares; without isolation nothing keeps the candidate's processes
        away from the verdict (they may outlive a stage and share the uid): `shared`."""
        return checker.verdict_isolation if self.isolation is not None else VerdictIsolation.SHARED

    def _post(self, item: VerificationItem, outcome: CheckOutcome, log: bytes, checker: Checker) -> str:
        log_digest = self.port.put_blob(log)
        if log_digest != digest_bytes(log):
            raise IntegrityError("the service stored the log under another digest")
        body: dict[str, Any] = {
            "task_id": item.task_id,
            "attempt_id": item.attempt_id,
            "contract_hash": item.contract_hash,
            "candidate_digest": item.candidate_digest,
            "dependency_digest": item.dependency_digest,
            "criterion": item.criterion,
            "checker": item.checker,
            "result": "pass" if outcome.passed else "fail",
            "issued_at": int(self.clock() * 1000),
            "issuer": item.issuer,
            "log_digest": log_digest,
            "verdict_isolation": self._isolation_of(checker).value,
        }
        return self.port.post_receipt(item.candidate_id, body, sign(self.key, body))


def _own_conflicts(spec: CandidateTree) -> list[tuple[str, str]]:
    """What the candidate's files alone make both a file and a directory."""
    return file_dir_conflicts(e.path for e in spec.entries if e.source == "candidate")


def _unbuildable(item: VerificationItem, spec: CandidateTree, why: str) -> tuple[CheckOutcome, bytes]:
    """A fail: the candidate's own files cannot form a tree (a verdict on its bytes)."""
    outcome = CheckOutcome(False, f"{why}\n".encode(), f"the tree cannot be built: {why}")
    return outcome, _log(item, spec, None, outcome)


def _check_digests(item: VerificationItem) -> None:
    """Recompute what the receipt will bind instead of trusting the service's word for it."""
    if candidate_digest(item.files, item.modes) != item.candidate_digest:
        raise IntegrityError("the candidate digest does not match the candidate's files")
    deps = {
        "bases": dict(item.bases),
        "files": dict(item.file_deps),
        "collections": dict(item.collection_deps),
    }
    if digest_json(deps) != item.dependency_digest:
        raise IntegrityError("the dependency digest does not match the candidate's declarations")


def _log(item: VerificationItem, spec: CandidateTree, sealed: str | None, outcome: CheckOutcome) -> bytes:
    head = [
        "studiolo verifier log v1",
        f"checker: {item.checker} (kind {item.checker_kind}), criterion {item.criterion}",
        f"task: {item.task_id}, attempt {item.attempt_id}, contract {item.contract_hash}",
        f"candidate: {item.candidate_id} {item.candidate_digest}",
        f"dependency manifest: {item.dependency_digest}",
        f"tree: {sealed or 'not built'} ({len(spec.entries)} files)",
        *_revisions(spec.entries),
        f"result: {'pass' if outcome.passed else 'fail'}",
        f"summary: {outcome.summary}",
        "--- checker output ---",
    ]
    return ("\n".join(head) + "\n").encode() + outcome.log


def _revisions(entries: Iterable[Any]) -> list[str]:
    """One line per file: where its bytes came from (current / declared revision, or candidate)."""
    out = []
    for e in entries:
        where = "candidate" if e.revision is None else f"{e.source} r{e.revision}"
        out.append(f"  {e.path} @ {where} {e.digest}")
    return out
