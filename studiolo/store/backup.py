"""Backup and restore: one portable JSON-lines file holding every table of the ledger.

The file is back-end neutral (a SQLite backup restores into PostgreSQL and vice versa):

    {"format": "studiolo-backup", "version": 1, "schema": "0001", ...}   header
    {"t": "projects", "c": ["id", "name", "created_at"]}                   a table's columns
    {"t": "projects", "v": ["prj_…", "demo", 1800000000.0]}               one row per line
    …
    {"end": true, "rows": {"projects": 1, …}, "sha256": "…"}              trailer

Binary columns are base64; floats keep every bit (shortest round-trip repr). The trailer
carries the SHA-256 of every byte before it, so a truncated or edited file is refused
before anything is touched. A name ending in `.gz` is gzip-compressed. The file holds the
service signing key, so it is written 0600.

A restore replaces the whole ledger in one transaction and starts a new authority
incarnation: a fresh `meta.incarnation` (every attempt and lease issued before it is dead,
since the lease predicate requires the attempt's incarnation to be current) and a fence
floor above every fence ever issued, so no fence repeats. The floor is the largest of the
restore time in microseconds since the epoch, the backup's highest fence + 1, and the
target's own highest fence and floor + 1 (read before they are replaced): fences issued
after the backup was taken are not in the file, so the clock term is what covers them (it
holds while fewer than one fence per microsecond is issued to a task, and while the
restoring clock is not behind the one that issued them). Attempt ids are random 128-bit
values and are never reissued. The restore is appended to the ledger's audit chain as
`ledger.restored`. Authority is settled against the ledger the restore replaces (read
before it is replaced): its revocations and key replacements win, and what it cannot vouch
for is held until an admin reconfirms it (`store/authority.py`). The `chains` table (each
chain's head) is a table like the others; on PostgreSQL the `events_seq` sequence restarts
after the highest restored seq.

Copying every table is generated over the schema's tables (reflected at the backup's
revision), so it stays SQLAlchemy Core: `select(table)`, `table.insert()` with its batched
executemany, `table.delete()`. The other statements are `:name` SQL text through `Raw`.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from sqlalchemy import Connection, LargeBinary, MetaData, Table, inspect, select

from studiolo.store import authority, migrations
from studiolo.store import schema as s
from studiolo.store._raw import Raw, columns, in_list, in_params
from studiolo.store.authority import HeldPrincipal
from studiolo.store.engine import Store

__all__ = ["FORMAT", "BackupError", "BackupInfo", "RestoreInfo", "backup", "restore"]

FORMAT = "studiolo-backup"
VERSION = 1
_BATCH = 500


_ADD_TOMBSTONE = (
    f"INSERT INTO tombstones ({', '.join(c.name for c in s.tombstones.c)})"
    f" VALUES ({', '.join(':' + c.name for c in s.tombstones.c)})"
)


class BackupError(Exception):
    """The file is not a complete Studiolo backup, or the target cannot take it."""


@dataclass(frozen=True)
class BackupInfo:
    path: Path
    schema: str
    source: str
    incarnation: str
    rows: dict[str, int]


@dataclass(frozen=True)
class RestoreInfo:
    schema: str
    previous_incarnation: str
    incarnation: str
    fence_floor: int
    rows: dict[str, int]
    carried: dict[str, int]  # revocations and key replacements the replaced ledger won
    held: tuple[HeldPrincipal, ...]  # principals whose authority waits for a reconfirmation
    service_key: str  # "kept", "carried" (the replaced ledger's newer key) or "rotated"


# backup -----------------------------------------------------------------------------
def backup(store: Store, path: Path) -> BackupInfo:
    """Write every table, read on one consistent snapshot, to `path` (atomically)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    revision = store.schema_revision()
    if revision != migrations.head():
        raise BackupError(f"the ledger is at schema {revision}, this build at {migrations.head()}: upgrade")

    def run(tx: Any) -> BackupInfo:
        with _open_write(tmp) as out:
            writer = _Writer(out)
            incarnation = tx.meta.get("incarnation") or ""
            writer.line(
                {
                    "format": FORMAT,
                    "version": VERSION,
                    "schema": revision,
                    "source": store.dialect,
                    "taken_at": tx.now,
                    "incarnation": incarnation,
                }
            )
            rows = {t.name: _dump_table(tx.conn, t, writer) for t in s.metadata.sorted_tables}
            writer.trailer(rows)
        return BackupInfo(path, revision or "", store.dialect, incarnation, rows)

    try:
        info = store.read(run)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return info


def _dump_table(conn: Connection, table: Table, writer: _Writer) -> int:
    cols = [c.name for c in table.columns]
    binary = [isinstance(c.type, LargeBinary) for c in table.columns]
    writer.line({"t": table.name, "c": cols})
    count = 0
    order = list(table.primary_key.columns)
    result = conn.execution_options(yield_per=_BATCH).execute(select(table).order_by(*order))
    for row in result:
        values = [_b64(v) if is_bin and v is not None else v for v, is_bin in zip(row, binary, strict=True)]
        writer.line({"t": table.name, "v": values})
        count += 1
    return count


class _Writer:
    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._digest = hashlib.sha256()

    def line(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        self._digest.update(data)
        self._out.write(data)

    def trailer(self, rows: dict[str, int]) -> None:
        end = {"end": True, "rows": rows, "sha256": self._digest.hexdigest()}
        self._out.write((json.dumps(end, separators=(",", ":")) + "\n").encode("utf-8"))


# restore ----------------------------------------------------------------------------
def restore(store: Store, path: Path, previous: Store | None = None) -> RestoreInfo:
    """Replace the ledger with the backup at `path` and start a new authority incarnation.

    Revocations and key replacements the replaced ledger knows win over the backup, and the
    authority it cannot vouch for is held until reconfirmed (`store/authority.py`). `previous`
    names one more ledger the backup replaces (say, the SQLite file of a move to PostgreSQL).
    """
    header, counts = _verify(Path(path))
    schema = str(header["schema"])
    if schema not in migrations.known_revisions():
        raise BackupError(f"backup schema {schema} is unknown to this build")
    sources = [_known_in(previous)] if previous is not None else []
    deleted = _deletions_in(previous) if previous is not None else []
    with store.exclusive() as conn:
        before = _previous_authority(conn)
        sources.insert(0, authority.known(conn))
        deleted += _deletions(conn)
        _prepare_target(conn, schema)
        tables = _reflect(conn)
        _clear(conn, tables)
        loaded = _load(conn, tables, Path(path))
        if loaded != counts:
            raise BackupError("the rows read differ from the trailer's counts")
        migrations.upgrade(conn, "head")
        _keep_deleted(conn, deleted)
        _restart_sequence(conn)
        settled = authority.settle(conn, sources, store.authority_clock(conn))
        if conn.dialect.name == "postgresql":
            # A bulk load: let the planner see the tables' real sizes now, not when autovacuum
            # next looks (plans made on the tables as they were empty scan a project's rows).
            conn.exec_driver_sql("ANALYZE")
        return _new_incarnation(store, conn, header, before, loaded, settled)


def _known_in(ledger: Store) -> authority.Known:
    with ledger.engine.connect() as conn, conn.begin():
        found = authority.known(conn)
    if found is authority.EMPTY:
        raise BackupError(f"the previous ledger {ledger.engine.url!r} has no ledger tables")
    return found


def _deletions_in(ledger: Store) -> list[dict[str, Any]]:
    with ledger.engine.connect() as conn, conn.begin():
        return _deletions(conn)


def _deletions(conn: Connection) -> list[dict[str, Any]]:
    """The tombstones of a ledger about to be replaced (none before migration 0014)."""
    if "tombstones" not in set(inspect(conn).get_table_names()):
        return []
    names = [c.name for c in s.tombstones.c]
    rows = Raw(conn).all(f"SELECT {columns(s.tombstones, 't')} FROM tombstones t", {})
    return [dict(zip(names, row, strict=True)) for row in rows]


def _keep_deleted(conn: Connection, deleted: list[dict[str, Any]]) -> None:
    """Bytes deleted in a replaced ledger stay deleted (docs/operations.md, "Retention and
    deletion"): their tombstones are carried over (where the project was restored) and every
    tombstoned blob is removed, whatever the backup holds."""
    raw = Raw(conn)
    projects = {r[0] for r in raw.all("SELECT id FROM projects", {})}
    have = {(r[0], r[1]) for r in raw.all("SELECT project_id, digest FROM tombstones", {})}
    for row in deleted:
        key = (row["project_id"], row["digest"])
        if key not in have and row["project_id"] in projects:
            raw.run(_ADD_TOMBSTONE, row)
            have.add(key)
    digests = sorted({d for _p, d in have} | {row["digest"] for row in deleted})
    for i in range(0, len(digests), 500):
        part = digests[i : i + 500]
        where = " WHERE digest IN " + in_list("d", len(part))
        raw.run("DELETE FROM blob_refs" + where, in_params("d", part))
        raw.run("DELETE FROM blobs" + where, in_params("d", part))


def _verify(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    digest = hashlib.sha256()
    header: dict[str, Any] | None = None
    trailer: dict[str, Any] | None = None
    with _open_read(path) as src:
        for raw in src:
            if trailer is not None:
                raise BackupError("data after the trailer")
            obj = _parse(raw)
            if obj.get("end") is True:
                trailer = obj
                continue
            digest.update(raw)
            header = header or obj
    if header is None or header.get("format") != FORMAT or header.get("version") != VERSION:
        raise BackupError(f"{path} is not a {FORMAT} version {VERSION} file")
    if trailer is None:
        raise BackupError(f"{path} is truncated: no trailer")
    if trailer.get("sha256") != digest.hexdigest():
        raise BackupError(f"{path} is corrupt: its digest does not match")
    return header, {str(k): int(v) for k, v in trailer["rows"].items()}


def _previous_authority(conn: Connection) -> dict[str, Any]:
    """What the target knew before it is replaced: its incarnation and fence bounds."""
    names = set(inspect(conn).get_table_names())
    if not {"meta", "tasks"} <= names:
        return {"incarnation": "", "fence": 0, "clock_last": 0.0}
    raw = Raw(conn)
    meta = {str(k): str(v) for k, v in raw.all("SELECT key, value FROM meta", {})}
    fence = _max_fence(raw)
    floor = int(meta.get("fence_floor", "0"))
    return {
        "incarnation": meta.get("incarnation", ""),
        "fence": max(int(fence), floor),
        "clock_last": float(meta.get("clock_last", "0")),
    }


def _max_fence(raw: Raw) -> int:
    row = raw.one("SELECT max(fence) FROM tasks", {})
    return int(row[0] or 0) if row is not None else 0


def _prepare_target(conn: Connection, schema: str) -> None:
    names = set(inspect(conn).get_table_names())
    if not names & {t.name for t in s.metadata.sorted_tables}:
        migrations.upgrade(conn, schema)  # an empty database: build the backup's schema
        return
    current = migrations.current(conn)
    if current != schema:
        raise BackupError(
            f"the target ledger is at schema {current} and the backup at {schema}: "
            "restore into an empty database, or into one at the backup's schema"
        )


def _reflect(conn: Connection) -> list[Table]:
    """The target's tables as they are at the backup's schema, in dependency order."""
    reflected = MetaData()
    wanted = [t.name for t in s.metadata.sorted_tables]
    reflected.reflect(conn, only=[n for n in wanted if n in set(inspect(conn).get_table_names())])
    return [t for t in reflected.sorted_tables if t.name in wanted]


def _clear(conn: Connection, tables: list[Table]) -> None:
    for table in reversed(tables):
        conn.execute(table.delete())


def _load(conn: Connection, tables: list[Table], path: Path) -> dict[str, int]:
    by_name = {t.name: t for t in tables}
    counts: dict[str, int] = {}
    batch: list[dict[str, Any]] = []
    table: Table | None = None
    columns: list[str] = []
    for obj in _records(path):
        if "c" in obj:
            _flush(conn, table, batch)
            table = by_name.get(obj["t"])
            if table is None:
                raise BackupError(f"the backup has a table {obj['t']!r} this schema lacks")
            columns = list(obj["c"])
            counts[table.name] = 0
            continue
        assert table is not None and obj["t"] == table.name
        batch.append(_row(table, columns, obj["v"]))
        counts[table.name] += 1
        if len(batch) >= _BATCH:
            _flush(conn, table, batch)
    _flush(conn, table, batch)
    return counts


def _row(table: Table, columns: list[str], values: list[Any]) -> dict[str, Any]:
    row = dict(zip(columns, values, strict=True))
    for col in table.columns:
        if isinstance(col.type, LargeBinary) and row.get(col.name) is not None:
            row[col.name] = base64.b64decode(row[col.name])
    return row


def _flush(conn: Connection, table: Table | None, batch: list[dict[str, Any]]) -> None:
    if table is not None and batch:
        conn.execute(table.insert(), batch)
    batch.clear()


def _restart_sequence(conn: Connection) -> None:
    """PostgreSQL: the next event's seq follows the restored events (the sequence itself is
    not in the file)."""
    if conn.dialect.name != "postgresql":
        return
    raw = Raw(conn)
    row = raw.one("SELECT max(seq) FROM events", {})
    last = row[0] if row is not None else None
    if last:
        raw.one("SELECT setval('events_seq', :last)", {"last": int(last)})
    else:
        raw.one("SELECT setval('events_seq', 1, false)", {})


def _new_incarnation(
    store: Store,
    conn: Connection,
    header: dict[str, Any],
    previous: dict[str, Any],
    rows: dict[str, int],
    settled: authority.Settled,
) -> RestoreInfo:
    tx = store.tx_on(conn, write=True)
    now = store.authority_clock(conn)  # the new incarnation's clock guard starts here
    latest = max(now, tx.now, float(previous["clock_last"]))
    raw = Raw(conn)
    backup_fence = _max_fence(raw)
    backup_floor = int(tx.meta.get("fence_floor") or "0")
    floor = 1 + max(int(latest * 1_000_000), int(backup_fence), backup_floor, int(previous["fence"]))
    raw.run("UPDATE tasks SET fence = :floor WHERE fence < :floor", {"floor": floor})
    incarnation = "inc_" + secrets.token_hex(16)
    tx.meta.set("incarnation", incarnation)
    tx.meta.set("fence_floor", str(floor))
    tx.meta.set("clock_last", repr(now))
    tx.audit.append(
        None,
        "ledger.restored",
        None,
        None,
        {
            "backup_schema": header["schema"],
            "backup_source": header.get("source"),
            "backup_taken_at": header.get("taken_at"),
            "backup_incarnation": header.get("incarnation"),
            "previous_incarnation": previous["incarnation"],
            "incarnation": incarnation,
            "fence_floor": floor,
            "carried": settled.carried,
            "service_key": settled.service_key,
            "held": [h.principal_id for h in settled.held],
        },
        now,
    )
    return RestoreInfo(
        str(header["schema"]),
        previous["incarnation"],
        incarnation,
        floor,
        rows,
        settled.carried,
        settled.held,
        settled.service_key,
    )


# files ------------------------------------------------------------------------------
def _records(path: Path) -> Iterator[dict[str, Any]]:
    with _open_read(path) as src:
        next(src)  # the header
        for raw in src:
            obj = _parse(raw)
            if obj.get("end") is True:
                return
            yield obj


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise BackupError(f"not a JSON line: {raw[:60]!r}") from exc
    if not isinstance(obj, dict):
        raise BackupError("every line of a backup is a JSON object")
    return obj


def _open_read(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


class _open_write:
    """A private (0600) file written in full and fsynced before it is renamed into place."""

    def __init__(self, path: Path) -> None:
        self._path = path
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.fchmod(fd, 0o600)  # a leftover partial file may have had another mode
        self._raw = os.fdopen(fd, "wb")
        gz = path.name.endswith(".gz.partial")
        self._out = cast(IO[bytes], gzip.GzipFile(fileobj=self._raw, mode="wb")) if gz else self._raw

    def __enter__(self) -> IO[bytes]:
        return self._out

    def __exit__(self, *exc: object) -> None:
        if self._out is not self._raw:
            self._out.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()


def _b64(value: bytes | memoryview) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")
