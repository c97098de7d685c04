"""The publication log: one row per change to a project's artifacts, appended in the
change's own transaction; projections (studiolo/git) read it in version order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from studiolo.core.model import FileMode, Publication
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, in_list, in_params

__all__ = ["PublicationRepo"]

_APPEND = (
    "INSERT INTO publications (project_id, version, kind, actor, at, changes, meta)"
    " VALUES (:p, :v, :kind, :actor, :at, :changes, :meta)"
)
_AFTER = (
    "SELECT project_id, version, kind, actor, at, changes, meta FROM publications"
    " WHERE project_id = :p AND version > :v ORDER BY version LIMIT :n"
)
_HEAD = "SELECT MAX(version) FROM publications WHERE project_id = :p"
_PENDING = "SELECT COUNT(*) FROM publications WHERE project_id = :p AND version > :v"
_PROJECTS = "SELECT id FROM projects ORDER BY id"


class PublicationRepo:
    def __init__(self, conn: Connection) -> None:
        self._raw = Raw(conn)
        self.appended: set[str] = set()  # projects this transaction logged a change of

    def append(
        self,
        project_id: str,
        version: int,
        kind: str,
        actor: str | None,
        at: float,
        changes: Mapping[str, tuple[str | None, FileMode | None]],
        meta: Mapping[str, Any],
    ) -> None:
        """Log one change (sent with the change's other writes; nothing waits for it)."""
        self.appended.add(project_id)
        wire = {p: [d, m.value if m else None] for p, (d, m) in changes.items()}
        params = {"p": project_id, "v": version, "kind": kind, "actor": actor, "at": at}
        self._raw.send(_APPEND, params | {"changes": dumps(wire), "meta": dumps(dict(meta))})

    def after(self, project_id: str, version: int, limit: int = 100) -> list[Publication]:
        """The project's publications above `version`, oldest first."""
        rows = self._raw.all(_AFTER, {"p": project_id, "v": version, "n": limit})
        return [_publication(r) for r in rows]

    def head(self, project_id: str) -> int:
        """The version of the project's last publication (0: none)."""
        row = self._raw.one(_HEAD, {"p": project_id})
        return int(row[0]) if row and row[0] is not None else 0

    def pending(self, project_id: str, version: int) -> int:
        """How many of the project's publications are above `version`."""
        row = self._raw.one(_PENDING, {"p": project_id, "v": version})
        return int(row[0]) if row else 0

    def projects(self) -> list[str]:
        """Every project's id (each may have a publication log)."""
        return [str(r[0]) for r in self._raw.all(_PROJECTS, {})]

    def event_hashes(self, versions: Sequence[int]) -> dict[int, str]:
        """The audit event's hash at each version (those with an event), the chain's head right
        after that change: one statement per 400."""
        out: dict[int, str] = {}
        wanted = sorted(set(versions))
        for i in range(0, len(wanted), 400):
            part = wanted[i : i + 400]
            sql = "SELECT seq, hash FROM events WHERE seq IN " + in_list("v", len(part))
            for seq, hash_ in self._raw.all(sql, in_params("v", part)):
                out[int(seq)] = str(hash_)
        return out


def _publication(row: Sequence[Any]) -> Publication:
    project_id, version, kind, actor, at, changes, meta = row
    parsed = {
        str(p): (None, None) if v is None else (v[0], FileMode(v[1]) if v[1] else None)
        for p, v in loads(changes).items()
    }
    return Publication(str(project_id), int(version), str(kind), actor, float(at), parsed, loads(meta))
