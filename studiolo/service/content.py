"""Blobs, artifacts (reads and direct edits), candidates and observations."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from studiolo._exceptions import Conflict, InvalidRequest, NotAuthorized, NotFound, PayloadTooLarge
from studiolo.core.canonical import digest_bytes, digest_json, is_digest
from studiolo.core.model import (
    Action,
    Artifact,
    AttemptStatus,
    Candidate,
    FileMode,
    Observation,
    Principal,
    candidate_digest,
)
from studiolo.core.paths import matches_any, normalize_path, normalize_prefix
from studiolo.core.reasons import ErrorReason, Reason
from studiolo.service._door import Context
from studiolo.service._ids import check_id
from studiolo.service.evidence import request_verification
from studiolo.service.retention import deleted_error
from studiolo.store import Tx

__all__ = ["ArtifactContent", "CandidateDraft", "ContentOps"]


@dataclass(frozen=True)
class ArtifactContent:
    artifact: Artifact
    data: bytes | None  # None for a tombstone


@dataclass(frozen=True)
class CandidateDraft:
    """What a worker declares; the server normalizes it and derives the write set."""

    files: Mapping[str, str | None]
    bases: Mapping[str, int]
    file_deps: Mapping[str, int]
    collection_deps: Mapping[str, int]
    modes: Mapping[str, FileMode] = field(default_factory=dict)  # written path → mode; absent: regular


def _modes(raw: Mapping[str, FileMode], files: Mapping[str, str | None]) -> dict[str, FileMode]:
    """The draft's modes, normalized: only written paths of the candidate, only the executable
    ones kept (regular is the default, so one candidate has one spelling and one digest)."""
    out: dict[str, FileMode] = {}
    for path, mode in raw.items():
        norm = normalize_path(path)
        try:
            value = FileMode(mode)
        except ValueError:
            raise InvalidRequest(f"unknown mode {str(mode)[:40]!r} for {norm!r}") from None
        if norm not in files or (files[norm] is None and value is not FileMode.REGULAR):
            raise InvalidRequest(f"a mode for {norm!r}, which the candidate does not write")
        if out.get(norm, value) is not value:
            raise InvalidRequest(f"two spellings of {norm!r} have different modes")
        out[norm] = value
    return {p: m for p, m in sorted(out.items()) if m is FileMode.EXECUTABLE}


def _revision(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidRequest(f"{what} must be a non-negative integer revision")
    return value


def _normalized_map(raw: Mapping[str, int], what: str, prefix: bool = False) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, rev in raw.items():
        norm = normalize_prefix(key) if prefix else normalize_path(key)
        if norm in out and out[norm] != rev:
            raise InvalidRequest(f"{what}: two spellings of {norm!r} declare different revisions")
        out[norm] = _revision(rev, f"{what} {norm!r}")
    return out


class ContentOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # blobs -----------------------------------------------------------------
    def put_blob(self, caller: Principal, data: bytes) -> str:
        """Store bytes under their digest (idempotent), held by the caller's project; the digest."""
        if len(data) > self.ctx.settings.max_blob_bytes:
            raise PayloadTooLarge(f"blob exceeds {self.ctx.settings.max_blob_bytes} bytes")
        digest = digest_bytes(data)

        def run(tx: Tx) -> None:
            tx.content.put_blob(digest, data, tx.now)
            if caller.project_id is not None:
                tx.content.add_blob_ref(caller.project_id, [digest])

        self.ctx.store.write(run)
        return digest

    def get_blob(self, caller: Principal, digest: str) -> bytes:
        """A blob's bytes, if the caller's project holds them (a scoped reader: at a path it may read)."""
        if not is_digest(digest):
            raise InvalidRequest(f"malformed digest {digest[:80]!r}")

        def run(tx: Tx) -> bytes | None:
            pid = caller.project_id
            if not caller.is_service_admin:
                if pid is None or not self.ctx.can(tx, caller, pid, Action.READ):
                    return None
                if tx.content.unreadable_blobs(pid, [digest]):
                    self._raise_if_deleted(tx, caller, pid, digest)
                    return None  # another project's bytes: not found, never a hint
                may_read = self.ctx.path_reader(tx, caller, pid)
                if may_read is not None and not any(map(may_read, tx.content.paths_of_blob(pid, digest))):
                    return None  # bytes only of paths outside the caller's read scope
            data = tx.content.blob(digest)
            if data is None and pid is not None:
                self._raise_if_deleted(tx, caller, pid, digest)
            elif data is None:  # a service admin: any project's tombstone says what happened
                stone = tx.retention.tombstone_anywhere(digest)
                if stone is not None:
                    raise deleted_error(stone)
            return data

        data = self.ctx.store.read(run)
        if data is None:
            raise NotFound(f"blob {digest} not found", reason=ErrorReason.BLOB_MISSING)
        return data

    def _raise_if_deleted(self, tx: Tx, caller: Principal, project_id: str, digest: str) -> None:
        """`bytes_deleted` if the project deleted these bytes (and the caller may read a path
        that held them, or they held none)."""
        stone = tx.retention.tombstones(project_id, [digest]).get(digest)
        if stone is None:
            return
        may_read = self.ctx.path_reader(tx, caller, project_id)
        if may_read is None or any(map(may_read, stone.paths)):
            raise deleted_error(stone)

    def collect_garbage(self, caller: Principal, older_than: float = 3600.0) -> int:
        """Delete the blobs nothing references, older than `older_than` seconds; how many.

        Referenced: by an artifact revision, a candidate, a receipt's log or a delegation's
        evidence. A service admin's write on the whole ledger, audited (`blobs.collected`).
        The age spares bytes staged for a candidate not yet submitted."""
        if not caller.is_service_admin:
            raise NotAuthorized("only a service administrator collects garbage")
        number = isinstance(older_than, int | float) and not isinstance(older_than, bool)
        if not number or not math.isfinite(older_than):
            raise InvalidRequest("older_than is a number of seconds")

        def run(tx: Tx) -> int:
            refs = tx.content.referenced_digests()
            stale = [
                d for d, at in tx.content.all_blob_digests() if d not in refs and at < tx.now - older_than
            ]
            n = tx.content.delete_blobs(stale)
            self.ctx.audit(tx, None, "blobs.collected", caller, None, count=n, older_than=older_than)
            return n

        return self.ctx.store.write(run)

    # artifacts -------------------------------------------------------------
    def read_artifact(
        self, caller: Principal, project_id: str, path: str, revision: int | None = None
    ) -> ArtifactContent:
        """An artifact's bytes at its current revision (or at `revision`), if the caller may read its path."""
        norm = normalize_path(path)

        def run(tx: Tx) -> ArtifactContent:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ, norm)
            art = tx.content.artifact(project_id, norm)
            if art is None:
                raise NotFound(f"artifact {norm} not found")
            if revision is not None and revision != art.revision:
                old = [h for h in tx.content.history(project_id, norm) if h["revision"] == revision]
                if not old:
                    raise NotFound(f"artifact {norm} has no revision {revision}")
                art = Artifact(
                    project_id, norm, revision, old[0]["digest"], old[0]["changed_at"], old[0]["mode"]
                )
            data = tx.content.blob(art.digest) if art.digest else None
            if art.digest and data is None:
                stone = tx.retention.tombstones(project_id, [art.digest]).get(art.digest)
                if stone is not None:
                    raise deleted_error(stone)
                raise NotFound(f"the bytes of {norm} are missing", reason=ErrorReason.BLOB_MISSING)
            return ArtifactContent(art, data)

        return self.ctx.store.read(run)

    def list_artifacts(self, caller: Principal, project_id: str, prefix: str = "") -> list[Artifact]:
        """The project's artifacts under a prefix, those the caller may read."""
        norm = normalize_prefix(prefix)

        def run(tx: Tx) -> list[Artifact]:
            self.ctx.require_project(tx, caller, project_id)
            arts = tx.content.artifacts(project_id, norm)
            return [a for a in arts if self.ctx.can(tx, caller, project_id, Action.READ, a.path)]

        return self.ctx.store.read(run)

    def read_revision(self, caller: Principal, project_id: str, path: str) -> int:
        """The current revision of a path: 0 if it never existed (a tombstone has one)."""
        norm = normalize_path(path)

        def run(tx: Tx) -> int:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ, norm)
            return tx.content.revisions(project_id, [norm])[norm]

        return self.ctx.store.read(run)

    def collection_revision(self, caller: Principal, project_id: str, prefix: str) -> int:
        """The current revision of a collection (a path prefix) of the project."""
        norm = normalize_prefix(prefix)

        def run(tx: Tx) -> int:
            self.ctx.require_project(tx, caller, project_id)
            return tx.content.collection_revisions(project_id, [norm])[norm]

        return self.ctx.store.read(run)

    def edit_artifact(
        self,
        caller: Principal,
        project_id: str,
        path: str,
        digest: str | None,
        base_revision: int,
        mode: FileMode | None = None,
    ) -> Artifact:
        """A direct edit by another writer: compare-and-swap on the path's revision. `mode`
        None keeps the path's mode (regular for a new path)."""
        norm = normalize_path(path)
        base = _revision(base_revision, "base_revision")
        if digest is not None and not is_digest(digest):
            raise InvalidRequest(f"malformed digest {str(digest)[:80]!r}")

        def run(tx: Tx) -> Artifact:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.WRITE, norm)
            current = tx.content.revisions(project_id, [norm])[norm]
            if current != base:
                raise Conflict(
                    f"{norm} is at revision {current}, not {base}", reason=ErrorReason.REVISION_CONFLICT
                )
            if digest is not None:
                self._require_blobs(tx, caller, project_id, [digest])
                self._require_one_kind(tx, caller, project_id, {norm: digest})
                tx.content.add_blob_ref(project_id, [digest])
            rev = tx.content.write_artifact(project_id, norm, digest, tx.now, caller.id, "edit", mode)
            seq = self.ctx.audit(tx, project_id, "artifact.edited", caller, norm, revision=rev, digest=digest)
            art = tx.content.artifact(project_id, norm)
            assert art is not None
            meta = {"title": f"{'Edit' if digest else 'Delete'} {norm}", "path": norm, "revision": rev}
            change = {norm: (digest, art.mode)}
            tx.publications.append(project_id, seq, "edit", caller.id, tx.now, change, meta)
            return art

        return self.ctx.write_in(project_id, run)

    # candidates ------------------------------------------------------------
    def submit_candidate(self, caller: Principal, attempt_id: str, draft: CandidateDraft) -> Candidate:
        """Stage a candidate for the caller's current attempt: file digests, revisions read (audited)."""
        files = self._files(draft.files)
        bases = _normalized_map(draft.bases, "bases")
        if set(bases) != set(files):
            missing = sorted(set(files) ^ set(bases))
            raise InvalidRequest(f"declare a base revision for exactly the targets: {missing}")
        file_deps = _normalized_map(draft.file_deps, "file dependencies")
        dir_deps = _normalized_map(draft.collection_deps, "collection dependencies", prefix=True)
        modes = _modes(draft.modes, files)
        digest = candidate_digest(files, modes)
        dep_digest = digest_json({"bases": bases, "files": file_deps, "collections": dir_deps})

        def run(tx: Tx) -> Candidate:
            found = tx.work.attempt_and_task(check_id(attempt_id, "attempt id"))
            if found is None or not self.ctx.may_read_task(tx, caller, found[1]):
                raise NotFound(f"attempt {attempt_id} not found")
            attempt, task = found
            if attempt.principal_id != caller.id:
                raise Conflict(
                    "the attempt belongs to another principal", reason=Reason.CALLER_NOT_ATTEMPT_OWNER
                )
            if attempt.status is not AttemptStatus.ACTIVE or task.current_attempt_id != attempt.id:
                raise Conflict("the attempt is no longer current", reason=ErrorReason.ATTEMPT_NOT_ACTIVE)
            outside = sorted(p for p in files if not matches_any(task.contract.scope, p))
            if outside:
                # Refused before any verifier sees it: no checker ever runs out-of-scope bytes.
                raise Conflict(f"outside the task's scope: {outside[:5]}", reason=Reason.SCOPE_VIOLATION)
            self._require_blobs(tx, caller, task.project_id, [d for d in files.values() if d])
            self._require_one_kind(tx, caller, task.project_id, files)
            cand = Candidate(
                self.ctx.ids.new("cnd"),
                task.id,
                attempt.id,
                files,
                bases,
                file_deps,
                dir_deps,
                digest,
                dep_digest,
                tx.now,
                modes,
            )
            tx.content.add_candidate(task.project_id, cand)
            self.ctx.audit(
                tx,
                task.project_id,
                "candidate.submitted",
                caller,
                cand.id,
                task=task.id,
                attempt=attempt.id,
                digest=digest,
                dependency_digest=dep_digest,
                write_set=sorted(files),
                files=files,
                **({"modes": dict(modes)} if modes else {}),
                bases=bases,
                file_deps=file_deps,
                collection_deps=dir_deps,
            )
            request_verification(tx, task, cand, caller)
            return cand

        return self.ctx.write_about("attempt", attempt_id, run)

    @staticmethod
    def _require_blobs(tx: Tx, caller: Principal, project_id: str, digests: list[str]) -> None:
        """The bytes exist and this project may use them (uploaded here; admins upload anywhere)."""
        absent, unreadable = tx.content.blob_gaps(None if caller.is_service_admin else project_id, digests)
        missing = set(absent) | set(unreadable)
        if missing:
            raise InvalidRequest(
                f"blobs not uploaded: {sorted(missing)[:5]}", reason=ErrorReason.BLOB_MISSING
            )

    def _require_one_kind(
        self, tx: Tx, caller: Principal, project_id: str, files: Mapping[str, str | None]
    ) -> None:
        """`path_conflict` if writing `files` over the current tree would make a path both a
        file and a directory (no checkout, and no verifier's tree, could then be built). The
        detail names the other path only if the caller may read it."""
        conflicts = tx.content.tree_conflicts(project_id, files)
        if not conflicts:
            return
        above, below = conflicts[0]
        may_read = self.ctx.path_reader(tx, caller, project_id)
        shown = [
            p if may_read is None or may_read(p) or p in files else "(a path you may not read)"
            for p in (above, below)
        ]
        detail = f"{shown[0]} would be a file and also the directory of {shown[1]}"
        raise Conflict(detail, reason=Reason.PATH_CONFLICT)

    def _files(self, raw: Mapping[str, str | None]) -> dict[str, str | None]:
        if not isinstance(raw, Mapping) or not raw:
            raise InvalidRequest("a candidate changes at least one file")
        if len(raw) > self.ctx.settings.max_files_per_candidate:
            raise PayloadTooLarge(f"more than {self.ctx.settings.max_files_per_candidate} files")
        out: dict[str, str | None] = {}
        for path, digest in raw.items():
            norm = normalize_path(path)
            if digest is not None and not is_digest(digest):
                raise InvalidRequest(f"malformed digest for {norm!r}")
            if norm in out and out[norm] != digest:
                raise InvalidRequest(f"two spellings of {norm!r} map to different content")
            out[norm] = digest
        return out

    def candidate(self, caller: Principal, candidate_id: str) -> Candidate:
        """A candidate, its file maps cut to the caller's read scope."""

        def run(tx: Tx) -> Candidate:
            found = tx.content.candidate(check_id(candidate_id, "candidate id"))
            task = tx.work.task(found[1].task_id) if found else None
            if found is None or task is None or not self.ctx.may_read_task(tx, caller, task):
                raise NotFound(f"candidate {candidate_id} not found")
            return self.ctx.confine(tx, caller, task.project_id, found[1])

        return self.ctx.store.read(run)

    # observations ----------------------------------------------------------
    def observe(
        self,
        caller: Principal,
        project_id: str,
        target: str,
        kind: str,
        revision: int | None = None,
        digest: str | None = None,
    ) -> Observation:
        """Record a historical fact (deployed, healthy, ...). It never implies it still holds."""
        norm = normalize_path(target)
        if not isinstance(kind, str) or not kind or len(kind) > 50:
            raise InvalidRequest("an observation needs a kind of at most 50 characters")
        if revision is not None:
            _revision(revision, "revision")
        if digest is not None and not is_digest(digest):
            raise InvalidRequest("malformed digest")

        if revision is None and digest is None:
            raise InvalidRequest("an observation names the revision or the digest it observed")

        def run(tx: Tx) -> Observation:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.OBSERVE, norm)
            _require_observable(tx, project_id, norm, revision, digest)
            obs = Observation(
                id=self.ctx.ids.new("obs"),
                project_id=project_id,
                target=norm,
                revision=revision,
                digest=digest,
                kind=kind,
                observed_at=tx.now,
                observer_id=caller.id,
            )
            tx.content.add_observation(obs)
            self.ctx.audit(
                tx,
                project_id,
                "observation.recorded",
                caller,
                norm,
                kind=kind,
                revision=revision,
                digest=digest,
            )
            return obs

        return self.ctx.write_in(project_id, run)

    def observations(
        self, caller: Principal, project_id: str, target: str | None = None
    ) -> list[Observation]:
        """The project's observations (of one target, if given) that the caller may read."""
        norm = normalize_path(target) if target else None

        def run(tx: Tx) -> list[Observation]:
            self.ctx.require_project(tx, caller, project_id)
            found = tx.content.observations(project_id, norm)
            return [o for o in found if self.ctx.can(tx, caller, project_id, Action.READ, o.target)]

        return self.ctx.store.read(run)


def _require_observable(tx: Tx, project_id: str, path: str, revision: int | None, digest: str | None) -> None:
    """An observation names a revision (or the digest of one) that exists now, never a future one."""
    history = tx.content.history(project_id, path)
    named = [
        h
        for h in history
        if (revision is None or h["revision"] == revision) and (digest is None or h["digest"] == digest)
    ]
    if not named:
        what = f"revision {revision}" if revision is not None else f"content {digest}"
        raise InvalidRequest(f"{path} has no {what} to observe")
