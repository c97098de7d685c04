"""Blobs, artifacts with revision history, collection revisions, candidates, observations."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from studiolo.core.model import Artifact, Candidate, FileMode, Observation
from studiolo.core.paths import ancestor_files, ancestors, file_dir_conflicts
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, Rows, columns, in_list, in_params

__all__ = ["ContentRepo", "candidate_of"]

# An artifact, and the writes of an edit (plain SQL text, see `_raw`).
_ARTIFACTS = f"SELECT {columns(s.artifacts, 'a')} FROM artifacts a WHERE a.project_id = :p"
_INSERT_ARTIFACT = (
    "INSERT INTO artifacts (project_id, path, revision, digest, updated_at, mode)"
    " VALUES (:p, :pth, :rev, :d, :at, :m)"
)
_MOVE_ARTIFACT = (
    "UPDATE artifacts SET revision = :rev, digest = :d, updated_at = :at, mode = :m"
    " WHERE project_id = :p AND path = :pth"
)
_INSERT_REVISION = (
    "INSERT INTO artifact_revisions (project_id, path, revision, digest, changed_at, actor, cause, mode)"
    " VALUES (:p, :pth, :rev, :d, :at, :actor, :cause, :m)"
)
_BUMP_COLLECTION = "UPDATE collections SET revision = revision + 1 WHERE project_id = :p AND prefix = :pfx"
_INSERT_COLLECTION = "INSERT INTO collections (project_id, prefix, revision) VALUES (:p, :pfx, 1)"
_LIKE_ESCAPE = str.maketrans({"/": "//", "%": "/%", "_": "/_"})  # `LIKE ... ESCAPE '/'`

# The cycle's blob and candidate statements (prepared SQL, see `_raw`).
_PUT_BLOB = (
    "INSERT INTO blobs (digest, size, data, created_at) VALUES (:d, :n, :data, :at)"
    " ON CONFLICT (digest) DO UPDATE SET created_at = excluded.created_at"
)
_BLOBS_HELD = "SELECT 0, digest FROM blobs WHERE digest IN "
_BLOB_REFS_HELD = "SELECT 1, digest FROM blob_refs WHERE project_id = :p AND "
_INSERT_CANDIDATE = (
    "INSERT INTO candidates (id, project_id, task_id, attempt_id, manifest, digest, dependency_digest,"
    " created_at, modes) VALUES (:id, :p, :task, :attempt, :manifest, :d, :dd, :at, :modes)"
)
_CANDIDATE_SQL = f"SELECT {columns(s.candidates, 'c')} FROM candidates c WHERE c.id = :id"
_CANDIDATES_OF = (
    f"SELECT {columns(s.candidates, 'c')} FROM candidates c WHERE c.%s = :k ORDER BY c.created_at, c.id"
)
_CANDIDATES_OF_TASK = _CANDIDATES_OF % "task_id"
_CANDIDATES_OF_ATTEMPT = _CANDIDATES_OF % "attempt_id"

# The completion's statements (prepared SQL, see `_raw`): each handles every path at once.
_DECLARED_FILES = "SELECT 0, path, revision FROM artifacts WHERE project_id = :p AND "
_DECLARED_DIRS = "SELECT 1, prefix, revision FROM collections WHERE project_id = :p AND "
# What a write would make both a file and a directory: live files where it needs a directory,
# and the prefixes that ever held a path (a collection), under which it needs no file.
_LIVE_FILES = "SELECT 0, path FROM artifacts WHERE project_id = :p AND digest IS NOT NULL AND "
_EVER_DIRS = "SELECT 1, prefix FROM collections WHERE project_id = :p AND "
_LIVE_UNDER = (
    "SELECT path FROM artifacts WHERE project_id = :p AND digest IS NOT NULL"
    " AND substr(path, 1, CAST(:n AS INTEGER)) = :pfx ORDER BY path LIMIT :k"
)
_OBSERVATIONS = f"SELECT {columns(s.observations, 'o')} FROM observations o WHERE o.project_id = :p"
_INSERT_OBSERVATION = (
    f"INSERT INTO observations ({', '.join(c.name for c in s.observations.c)})"
    f" VALUES ({', '.join(':' + c.name for c in s.observations.c)})"
)
_CHUNK = 400  # rows per multi-row statement: well inside both back-ends' parameter limits

# What a task view asks of a completion's revisions: the digest each revision published, and
# the deployments observed since the commit.
_REVISION_DIGESTS = "SELECT path, digest FROM artifact_revisions WHERE project_id = :p AND "
# Who made given revisions, and how (a refusal's details).
_REVISION_CHANGES = (
    "SELECT path, revision, changed_at, actor, cause FROM artifact_revisions WHERE project_id = :p AND "
)
_DEPLOYED_SINCE = (
    f"SELECT {columns(s.observations, 'o')} FROM observations o WHERE o.project_id = :p"
    " AND o.kind = 'deployed' AND o.observed_at >= :at AND "
)


def _values(n: int, names: tuple[str, ...], literal: str = "") -> str:
    rows = (", ".join([*(f":{c}_{i}" for c in names), *([literal] if literal else [])]) for i in range(n))
    return ", ".join(f"(:p, {row})" for row in rows)


@functools.lru_cache(maxsize=64)
def _upsert_artifacts(n: int) -> str:
    return (
        "INSERT INTO artifacts (project_id, path, digest, updated_at, mode, revision) VALUES "
        + _values(n, ("path", "d", "at", "m"), "1")
        + " ON CONFLICT (project_id, path) DO UPDATE SET revision = artifacts.revision + 1,"
        " digest = excluded.digest, updated_at = excluded.updated_at, mode = excluded.mode"
        " RETURNING path, revision"
    )


@functools.lru_cache(maxsize=64)
def _move_artifacts(n: int) -> str:
    """`_upsert_artifacts` with each path's new revision given (its revision + 1, 1 for a new
    path), nothing returned; a pointer that is not at the revision before fails the
    statement (NULL into a NOT NULL column) rather than being moved."""
    return (
        "INSERT INTO artifacts (project_id, path, digest, updated_at, mode, revision) VALUES "
        + _values(n, ("path", "d", "at", "m", "rev"))
        + " ON CONFLICT (project_id, path) DO UPDATE SET revision ="
        " CASE WHEN artifacts.revision + 1 = excluded.revision THEN excluded.revision END,"
        " digest = excluded.digest, updated_at = excluded.updated_at, mode = excluded.mode"
    )


@functools.lru_cache(maxsize=64)
def _add_blob_refs(n: int) -> str:
    values = _values(n, ("d",))
    return "INSERT INTO blob_refs (project_id, digest) VALUES " + values + " ON CONFLICT DO NOTHING"


@functools.lru_cache(maxsize=64)
def _insert_revisions(n: int) -> str:
    """The history rows of a completion, each with the mode the candidate gives its path."""
    return (
        "INSERT INTO artifact_revisions (project_id, path, revision, digest, changed_at, actor, cause, mode)"
        " VALUES " + _values(n, ("path", "rev", "d", "at", "actor", "cause", "m"))
    )


@functools.lru_cache(maxsize=64)
def _bump_collections(n: int) -> str:
    return (
        "INSERT INTO collections (project_id, prefix, revision) VALUES "
        + _values(n, ("pfx", "k"))
        + " ON CONFLICT (project_id, prefix)"
        " DO UPDATE SET revision = collections.revision + excluded.revision"
    )


def _rows(n: int, **columns: list[Any]) -> dict[str, Any]:
    """Parameters `:col_i` of an n-row VALUES list."""
    return {f"{c}_{i}": values[i] for c, values in columns.items() for i in range(n)}


class ContentRepo:
    def __init__(self, conn: Connection) -> None:
        self._raw = Raw(conn)

    # blobs
    def put_blob(self, digest: str, data: bytes, at: float) -> None:
        """Store bytes under their digest; if they were already there, they count as staged
        now (garbage collection spares young blobs, and these are about to be used)."""
        self._raw.run(_PUT_BLOB, {"d": digest, "n": len(data), "data": data, "at": at})

    def add_blob_ref(self, project_id: str, digests: Iterable[str]) -> None:
        """Let `project_id` read these blobs (it uploaded or published them)."""
        wanted = sorted(set(digests))
        for i in range(0, len(wanted), _CHUNK):
            part = wanted[i : i + _CHUNK]
            self._raw.run(_add_blob_refs(len(part)), {"p": project_id} | _rows(len(part), d=part))

    def unreadable_blobs(self, project_id: str, digests: Iterable[str]) -> list[str]:
        """The digests that `project_id` may not read (never uploaded or published there)."""
        return self.blob_gaps(project_id, digests)[1]

    def blob_gaps(self, project_id: str | None, digests: Iterable[str]) -> tuple[list[str], list[str]]:
        """(the digests with no bytes stored, those `project_id` may not read), sorted: one read
        per chunk of digests (the second list is empty when `project_id` is None)."""
        wanted = sorted(set(digests))
        held: tuple[set[str], set[str]] = (set(), set())
        for i in range(0, len(wanted), _CHUNK):
            part = wanted[i : i + _CHUNK]
            parts = [_BLOBS_HELD + in_list("b", len(part))]
            if project_id is not None:
                parts.append(self._raw.keyed(_BLOB_REFS_HELD, (("digest", "b", "text"),), len(part)))
            params: dict[str, Any] = {"p": project_id} | in_params("b", part)
            for kind, digest in self._raw.all(" UNION ALL ".join(parts), params):
                held[int(kind)].add(str(digest))
        missing = [d for d in wanted if d not in held[0]]
        unreadable = [d for d in wanted if d not in held[1]] if project_id is not None else []
        return missing, unreadable

    def paths_of_blob(self, project_id: str, digest: str) -> set[str]:
        """Every path of the project that holds or held these bytes, or that a candidate writes."""
        params = {"p": project_id, "d": digest, "like": "%" + digest.translate(_LIKE_ESCAPE) + "%"}
        sql = "SELECT path FROM artifact_revisions WHERE project_id = :p AND digest = :d"
        paths = {r[0] for r in self._raw.all(sql, params)}
        sql = "SELECT manifest FROM candidates WHERE project_id = :p AND manifest LIKE :like ESCAPE '/'"
        for (manifest,) in self._raw.all(sql, params):
            paths.update(p for p, d in loads(manifest)["files"].items() if d == digest)
        return paths

    def has_blob(self, digest: str) -> bool:
        return not self.blob_gaps(None, [digest])[0]

    def blob(self, digest: str) -> bytes | None:
        row = self._raw.one("SELECT data FROM blobs WHERE digest = :d", {"d": digest})
        return bytes(row[0]) if row else None

    def blobs(self, digests: Iterable[str]) -> dict[str, bytes]:
        """`blob` of each digest stored (a missing one is absent): one statement per chunk."""
        wanted = sorted(set(digests))
        out: dict[str, bytes] = {}
        for i in range(0, len(wanted), _CHUNK):
            part = wanted[i : i + _CHUNK]
            sql = "SELECT digest, data FROM blobs WHERE digest IN " + in_list("d", len(part))
            out.update((str(d), bytes(data)) for d, data in self._raw.all(sql, in_params("d", part)))
        return out

    def delete_blobs(self, digests: Iterable[str]) -> int:
        """Delete these blobs and every project's reference to them; how many blobs went."""
        wanted = list(digests)
        if not wanted:
            return 0
        where, params = " WHERE digest IN " + in_list("d", len(wanted)), in_params("d", wanted)
        self._raw.run("DELETE FROM blob_refs" + where, params)
        return self._raw.run("DELETE FROM blobs" + where, params)

    def all_blob_digests(self) -> list[tuple[str, float]]:
        """Every blob's digest and the time it was last staged."""
        return [(d, at) for d, at in self._raw.all("SELECT digest, created_at FROM blobs", {})]

    def referenced_digests(self) -> set[str]:
        """The digests an artifact revision, a candidate, a receipt's log or a delegation's evidence names."""
        refs = {r[0] for r in self._raw.all("SELECT digest FROM artifact_revisions", {}) if r[0]}
        for (manifest,) in self._raw.all("SELECT manifest FROM candidates", {}):
            refs.update(d for d in loads(manifest)["files"].values() if d)
        for (body,) in self._raw.all("SELECT body FROM receipts", {}):
            log = loads(body).get("log_digest")
            if log:
                refs.add(log)  # a receipt's log is evidence too: keep it as long as the receipt
        for (evidence,) in self._raw.all("SELECT evidence FROM a2a_remote_delegations", {}):
            blobs = loads(evidence).get("blobs", [])
            refs.update(d for d in blobs if isinstance(d, str))  # a delegation's evidence
        return refs

    # artifacts
    def artifact(self, project_id: str, path: str) -> Artifact | None:
        row = self._raw.one(_ARTIFACTS + " AND a.path = :pth", {"p": project_id, "pth": path})
        return _artifact(row) if row else None

    def artifacts(self, project_id: str, prefix: str = "") -> list[Artifact]:
        where = " AND a.path LIKE :like ESCAPE '/'" if prefix else ""
        params = {"p": project_id, "like": prefix.translate(_LIKE_ESCAPE) + "%"}
        return [_artifact(r) for r in self._raw.all(_ARTIFACTS + where + " ORDER BY a.path", params)]

    def revisions(self, project_id: str, paths: Iterable[str]) -> dict[str, int]:
        """Current revision of each path; 0 for a path that never existed."""
        return self.declared_revisions(project_id, paths, ())[0]

    def history(self, project_id: str, path: str) -> list[dict[str, Any]]:
        sql = (
            "SELECT revision, digest, changed_at, actor, cause, mode FROM artifact_revisions"
            " WHERE project_id = :p AND path = :pth ORDER BY revision"
        )
        return [
            {
                "revision": int(revision),
                "digest": digest,
                "changed_at": changed_at,
                "actor": actor,
                "cause": cause,
                "mode": FileMode(mode),
            }
            for revision, digest, changed_at, actor, cause, mode in self._raw.all(
                sql, {"p": project_id, "pth": path}
            )
        ]

    def write_artifact(
        self,
        project_id: str,
        path: str,
        digest: str | None,
        at: float,
        actor: str,
        cause: str,
        mode: FileMode | None = None,
    ) -> int:
        """Move the pointer of `path`; bump its revision and every ancestor's. Returns it.
        `mode` None keeps a live path's mode (else regular); a tombstone is regular."""
        current = self.artifact(project_id, path)
        revision = (current.revision if current else 0) + 1
        if digest is None:
            mode = FileMode.REGULAR  # a tombstone is regular
        elif mode is None:
            live = current is not None and current.digest is not None
            mode = current.mode if current is not None and live else FileMode.REGULAR
        values = {"p": project_id, "pth": path, "rev": revision, "d": digest, "at": at, "m": mode.value}
        self._raw.run(_INSERT_ARTIFACT if current is None else _MOVE_ARTIFACT, values)
        self._raw.run(_INSERT_REVISION, values | {"actor": actor, "cause": cause})
        for prefix in ancestors(path):
            self._bump_collection(project_id, prefix)
        return revision

    def publish(
        self,
        project_id: str,
        files: Mapping[str, str | None],
        at: float,
        actor: str,
        cause: str,
        current: Mapping[str, int] | None = None,
        modes: Mapping[str, FileMode] | None = None,
    ) -> dict[str, int]:
        """Move the pointers of several paths at once, as `write_artifact` does one by one:
        three statements per chunk of paths (pointers, history, collection counters).
        `modes`: a written path's mode (absent: regular, as a candidate says); a tombstone
        is regular.

        `current`: each path's revision (0: none), read earlier in this write (under the
        project's gate nothing moves them meanwhile). Then no statement waits for an answer
        (the new revisions are known); a pointer found elsewhere fails the write."""
        paths = sorted(files)
        revisions: dict[str, int] = {}
        for i in range(0, len(paths), _CHUNK):
            part = paths[i : i + _CHUNK]
            given = modes or {}
            kinds = [given.get(p, FileMode.REGULAR).value if files[p] else "regular" for p in part]
            revisions.update(self._publish_chunk(project_id, part, files, kinds, current, at, actor, cause))
        bumps = Counter(prefix for path in paths for prefix in ancestors(path))
        prefixes = sorted(bumps)
        for i in range(0, len(prefixes), _CHUNK):
            part = prefixes[i : i + _CHUNK]
            params = {"p": project_id} | _rows(len(part), pfx=part, k=[bumps[x] for x in part])
            self._raw.send(_bump_collections(len(part)), params)
        return {p: revisions[p] for p in paths}

    def _publish_chunk(
        self,
        project_id: str,
        paths: list[str],
        files: Mapping[str, str | None],
        kinds: list[str],
        current: Mapping[str, int] | None,
        at: float,
        actor: str,
        cause: str,
    ) -> dict[str, int]:
        """The pointers and the history of up to `_CHUNK` paths (`kinds`: their modes): the
        pointers' statement answers their new revisions, unless `current` gave them."""
        n = len(paths)
        digests = [files[p] for p in paths]
        rows = {"p": project_id} | _rows(n, path=paths, d=digests, at=[at] * n, m=kinds)
        if current is None:
            revisions = {str(path): int(rev) for path, rev in self._raw.all(_upsert_artifacts(n), rows)}
        else:
            revisions = {p: current[p] + 1 for p in paths}
            self._raw.send(_move_artifacts(n), rows | _rows(n, rev=[revisions[p] for p in paths]))
        history = _rows(
            n,
            path=paths,
            rev=[revisions[p] for p in paths],
            d=digests,
            at=[at] * n,
            actor=[actor] * n,
            cause=[cause] * n,
            m=kinds,
        )
        self._raw.send(_insert_revisions(n), {"p": project_id} | history)
        return revisions

    def declared_revisions(
        self, project_id: str, paths: Iterable[str], prefixes: Iterable[str]
    ) -> tuple[dict[str, int], dict[str, int]]:
        """`revisions` and `collection_revisions` in one statement (one per chunk when a
        candidate declares more than `_CHUNK` of them)."""
        return self.declared_revisions_later(project_id, paths, prefixes)()

    def declared_revisions_later(
        self, project_id: str, paths: Iterable[str], prefixes: Iterable[str]
    ) -> Callable[[], tuple[dict[str, int], dict[str, int]]]:
        """`declared_revisions(...)`, its reads sent now and answered when called (`Raw.later`)."""
        files, dirs = sorted(set(paths)), sorted(set(prefixes))
        if len(files) + len(dirs) <= _CHUNK:
            chunks = [(files, dirs)]
        else:
            chunks = [(files[i : i + _CHUNK], []) for i in range(0, len(files), _CHUNK)]
            chunks += [([], dirs[i : i + _CHUNK]) for i in range(0, len(dirs), _CHUNK)]
        sent = [self._declared(project_id, f, d) for f, d in chunks]

        def revisions() -> tuple[dict[str, int], dict[str, int]]:
            out: tuple[dict[str, int], dict[str, int]] = (dict.fromkeys(files, 0), dict.fromkeys(dirs, 0))
            for rows in sent:
                for kind, key, revision in rows():
                    out[int(kind)][str(key)] = int(revision)
            return out

        return revisions

    def _declared(self, project_id: str, files: list[str], dirs: list[str]) -> Rows:
        parts = [self._raw.keyed(_DECLARED_FILES, (("path", "f", "text"),), len(files))] if files else []
        parts += [self._raw.keyed(_DECLARED_DIRS, (("prefix", "d", "text"),), len(dirs))] if dirs else []
        if not parts:
            return list
        params = {"p": project_id} | in_params("f", files) | in_params("d", dirs)
        return self._raw.later(" UNION ALL ".join(parts), params)

    def tree_conflicts(self, project_id: str, files: Mapping[str, str | None]) -> list[tuple[str, str]]:
        """`tree_conflicts_later(...)()`: each pair (file, a file under it) writing `files` would make."""
        return self.tree_conflicts_later(project_id, files)()

    def tree_conflicts_later(
        self, project_id: str, files: Mapping[str, str | None]
    ) -> Callable[[], list[tuple[str, str]]]:
        """Send the reads that say whether writing `files` (path → digest, None deletes) over
        the project's current files would make a path both a file and a directory; answered
        when called: each pair (file, a file under it), sorted.

        One statement per chunk: the live files among the written files' ancestors, and which
        written files name a prefix that ever held a path. Only for those (rare: a directory
        turned into a file) the files under it are read."""
        live = sorted(p for p, d in files.items() if d is not None)
        gone = {p for p, d in files.items() if d is None}
        above = sorted({a for p in live for a in ancestor_files(p)} - set(files))
        keys = [(0, a) for a in above] + [(1, p + "/") for p in live]
        sent = [self._conflict_keys(project_id, keys[i : i + _CHUNK]) for i in range(0, len(keys), _CHUNK)]

        def conflicts() -> list[tuple[str, str]]:
            found = set(file_dir_conflicts(live))
            for rows in sent:
                for kind, key in rows():
                    if int(kind) == 0:
                        found.update((str(key), p) for p in live if p.startswith(f"{key}/"))
                    else:
                        found.update(self._live_under(project_id, str(key), gone))
            return sorted(found)

        return conflicts

    def _conflict_keys(self, project_id: str, keys: list[tuple[int, str]]) -> Rows:
        files = [k for kind, k in keys if kind == 0]
        dirs = [k for kind, k in keys if kind == 1]
        parts = [self._raw.keyed(_LIVE_FILES, (("path", "f", "text"),), len(files))] if files else []
        parts += [self._raw.keyed(_EVER_DIRS, (("prefix", "d", "text"),), len(dirs))] if dirs else []
        params = {"p": project_id} | in_params("f", files) | in_params("d", dirs)
        return self._raw.later(" UNION ALL ".join(parts), params)

    def _live_under(self, project_id: str, prefix: str, gone: set[str]) -> list[tuple[str, str]]:
        """(the file `prefix` names, a live file under it that `gone` does not delete), if any."""
        deleted_here = sum(1 for p in gone if p.startswith(prefix))
        params = {"p": project_id, "n": len(prefix), "pfx": prefix, "k": deleted_here + 1}
        rows = self._raw.all(_LIVE_UNDER, params)
        kept = [str(r[0]) for r in rows if str(r[0]) not in gone and str(r[0]).startswith(prefix)]
        return [(prefix[:-1], kept[0])] if kept else []

    def _bump_collection(self, project_id: str, prefix: str) -> None:
        key = {"p": project_id, "pfx": prefix}
        if self._raw.run(_BUMP_COLLECTION, key) == 0:
            self._raw.run(_INSERT_COLLECTION, key)

    def collection_revisions(self, project_id: str, prefixes: Iterable[str]) -> dict[str, int]:
        return self.declared_revisions(project_id, (), prefixes)[1]

    # candidates
    def add_candidate(self, project_id: str, c: Candidate) -> None:
        self._raw.run(
            _INSERT_CANDIDATE,
            {
                "id": c.id,
                "p": project_id,
                "task": c.task_id,
                "attempt": c.attempt_id,
                "manifest": dumps(_manifest(c)),
                "d": c.digest,
                "dd": c.dependency_digest,
                "at": c.created_at,
                "modes": dumps({p: FileMode(m).value for p, m in sorted(c.modes.items())}),
            },
        )

    def candidate(self, candidate_id: str) -> tuple[str, Candidate] | None:
        """(project id, candidate) for an id, or None."""
        row = self._raw.one(_CANDIDATE_SQL, {"id": candidate_id})
        return (str(row[1]), candidate_of(row)) if row else None

    def candidates_of_attempt(self, attempt_id: str) -> list[Candidate]:
        return [candidate_of(r) for r in self._raw.all(_CANDIDATES_OF_ATTEMPT, {"k": attempt_id})]

    def candidates_of_task(self, task_id: str) -> list[Candidate]:
        return self.candidates_of_task_later(task_id)()

    def candidates_of_task_later(self, task_id: str) -> Callable[[], list[Candidate]]:
        """`candidates_of_task(...)`, its read sent now and answered when called (`Raw.later`)."""
        return self._raw.later_as(_CANDIDATES_OF_TASK, {"k": task_id}, candidate_of)

    def changes(
        self, project_id: str, revisions: Mapping[str, int]
    ) -> dict[str, tuple[float, str | None, str]]:
        """For `revisions` (path → revision): when, by whom and how (`edit` or a completion
        id) each was made; a path whose revision has no record is left out."""
        paths, out = sorted(revisions), {}
        for i in range(0, len(paths), _CHUNK):
            part = paths[i : i + _CHUNK]
            sql = self._raw.keyed(
                _REVISION_CHANGES, (("path", "f", "text"), ("revision", "r", "bigint")), len(part)
            )
            keys = {"p": project_id} | in_params("f", part) | in_params("r", (revisions[p] for p in part))
            for path, rev, at, actor, cause in self._raw.all(sql, keys):
                if revisions.get(str(path)) == int(rev):
                    out[str(path)] = (float(at), actor, str(cause))
        return out

    def deployments(
        self, project_id: str, revisions: Mapping[str, int], since: float
    ) -> tuple[dict[str, str | None], list[Observation]]:
        """`deployments_later(...)()`."""
        return self.deployments_later(project_id, revisions, since)()

    def deployments_later(
        self, project_id: str, revisions: Mapping[str, int], since: float
    ) -> Callable[[], tuple[dict[str, str | None], list[Observation]]]:
        """For published `revisions` (path → revision): the digest each one published (path →
        digest), and the `deployed` observations of those paths made at or after `since`;
        the reads sent now (a statement of each per `_CHUNK` paths), answered when called."""
        paths = sorted(revisions)
        digests, seen = [], []
        for i in range(0, len(paths), _CHUNK):
            part = paths[i : i + _CHUNK]
            pairs = self._raw.keyed(
                _REVISION_DIGESTS, (("path", "f", "text"), ("revision", "r", "bigint")), len(part)
            )
            keys = {"p": project_id} | in_params("f", part) | in_params("r", (revisions[p] for p in part))
            digests.append(self._raw.later(pairs, keys))
            params = {"p": project_id, "at": since} | in_params("t", part)
            deployed = self._raw.keyed(_DEPLOYED_SINCE, (("o.target", "t", "text"),), len(part))
            seen.append(self._raw.later_as(deployed, params, _observation))

        def found() -> tuple[dict[str, str | None], list[Observation]]:
            published = {str(p): d for rows in digests for p, d in rows()}
            return published, [o for rows in seen for o in rows()]

        return found

    # observations
    def add_observation(self, o: Observation) -> None:
        self._raw.run(_INSERT_OBSERVATION, vars(o))

    def observations(self, project_id: str, target: str | None = None) -> list[Observation]:
        where = " AND o.target = :t" if target is not None else ""
        sql = _OBSERVATIONS + where + " ORDER BY o.observed_at, o.id"
        return [_observation(r) for r in self._raw.all(sql, {"p": project_id, "t": target})]


def _observation(row: Sequence[Any]) -> Observation:
    oid, project_id, target, revision, digest, kind, observed_at, observer_id = row
    return Observation(
        id=oid,
        project_id=project_id,
        target=target,
        revision=None if revision is None else int(revision),
        digest=digest,
        kind=kind,
        observed_at=float(observed_at),
        observer_id=observer_id,
    )


def _manifest(c: Candidate) -> dict[str, Any]:
    return {
        "files": dict(c.files),
        "bases": dict(c.bases),
        "file_deps": dict(c.file_deps),
        "collection_deps": dict(c.collection_deps),
    }


def _artifact(row: Sequence[Any]) -> Artifact:
    project_id, path, revision, digest, updated_at, mode = row
    return Artifact(project_id, path, int(revision), digest, updated_at, FileMode(mode))


def candidate_of(row: Sequence[Any]) -> Candidate:
    """A candidate from its columns in table order."""
    cid, _project, task_id, attempt_id, manifest, digest, dependency_digest, created_at, modes = row
    m = loads(manifest)
    return Candidate(
        id=cid,
        task_id=task_id,
        attempt_id=attempt_id,
        files=m["files"],
        bases=m["bases"],
        file_deps=m["file_deps"],
        collection_deps=m["collection_deps"],
        digest=digest,
        dependency_digest=dependency_digest,
        created_at=created_at,
        modes={p: FileMode(v) for p, v in loads(modes).items()},
    )
