"""Prepared SQL on the DB-API connection under a SQLAlchemy `Connection`: the hot paths.

SQLAlchemy's execution machinery costs tens of microseconds a statement; the completion
transaction runs a dozen statements. Its hot statements are plain SQL text that SQLite and
PostgreSQL read alike, written once with `:name` placeholders and run on the driver's own
connection, inside the transaction SQLAlchemy opened: `sqlite3` caches each statement
compiled, psycopg 3 prepares it on the server after a few executions.

In a pipelined PostgreSQL write, `later(sql, params)` sends a read and fetches its rows only
when they are asked for: reads sent one after another travel in one round trip.

Inside `with raw.together():`, writes made with `send` on PostgreSQL are held and go as one
statement, `WITH w0 AS (<write>), w1 AS (<write>), ... SELECT 1`: the server runs each one
exactly once, all on one snapshot, and checks foreign keys after the last. Two writes to
the same table never share a statement (one could not see the other's rows), so a write to
a table already held sends what is held first; so does any other statement through `Raw` or
SQLAlchemy on the connection, so the order of effects is the order of the calls. psycopg's
Python costs about as much per statement as the server's work on these small writes. On
SQLite `together` changes nothing. If the block raises, what it held is dropped: the
caller's transaction or savepoint is rolled back.

`in_list(name, n)` spells `IN (...)` with `n` numbered placeholders (`:name_0, ...`).
`Raw.keyed(sql, keys, n)` restricts a read to `n` exact keys so that PostgreSQL looks each one
up in the index whatever its statistics say (see `_keyed`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Connection, Table

__all__ = ["PIPELINE", "Bare", "Raw", "Rows", "columns", "flush_held", "in_list", "in_params"]

Rows = Callable[[], list[Sequence[Any]]]  # a read's rows, fetched when called
T = TypeVar("T")

PIPELINE = "studiolo_pipeline"  # connection info key: the psycopg pipeline a write runs in
_SENDER = "studiolo_sender"  # connection info key: (driver connection, the cursor of `send`)
_HELD = "studiolo_held"  # connection info key: (driver, the writes `together` holds: [(table, sql, params)])
_TARGET = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.IGNORECASE)

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class Raw:
    """Run SQL text on the driver connection of `conn` (which is inside a transaction)."""

    __slots__ = ("_conn", "_driver", "_pg")

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._pg = conn.dialect.name == "postgresql"
        self._driver: Any = None

    @property
    def pg(self) -> bool:
        return self._pg

    def keyed(self, sql: str, keys: tuple[tuple[str, str, str], ...], n: int) -> str:
        """`sql`, a SELECT whose WHERE ends in `AND `, restricted to `n` keys: key `i` is
        `column = :name_i` for each `(column, name, sql type)` of `keys` (`in_params(name, ...)`)."""
        return _keyed(sql, keys, n, self._pg)

    def _connection(self) -> Any:
        if self._driver is None:
            self._driver = self._conn.connection.dbapi_connection
        return self._driver

    def _cursor(self, sql: str, params: Mapping[str, Any]) -> Any:
        if self._pg:
            flush_held(self._conn.connection.info)
        return self._connection().execute(_pyformat(sql) if self._pg else sql, params)

    def run(self, sql: str, params: Mapping[str, Any]) -> int:
        """Execute a write; the number of rows it touched."""
        cursor = self._cursor(sql, params)
        pipeline = self._conn.connection.info.get(PIPELINE)
        if pipeline is not None:
            pipeline.sync()  # the count is known once the server answered
        return int(cursor.rowcount)

    def send(self, sql: str, params: Mapping[str, Any]) -> None:
        """Execute a write whose row count nobody needs. In a pipelined PostgreSQL write
        (`Store`) it travels with the next statement that needs an answer, or the COMMIT;
        an error it raises surfaces there. Such writes share one cursor per driver
        connection (a new psycopg cursor per statement costs more than sending it)."""
        driver, info = self._connection(), self._conn.connection.info
        held: tuple[Any, list[tuple[str, str, Mapping[str, Any]]]] | None = info.get(_HELD)
        if held is not None and held[0] is driver:
            table = _target(sql)
            if any(t == table for t, _, _ in held[1]):
                flush_held(info)
            held[1].append((table, sql, params))
            return
        _sender(info, driver).execute(_pyformat(sql) if self._pg else sql, params)

    @contextmanager
    def together(self) -> Iterator[None]:
        """Hold the writes `send` makes inside the block and send them as one statement at
        its end, on PostgreSQL (see the module docstring); dropped if the block raises."""
        info = self._conn.connection.info
        if not self._pg or _HELD in info:  # SQLite, or already inside a `together`
            yield
            return
        info[_HELD] = (self._connection(), [])
        try:
            yield
            flush_held(info)
        finally:  # if the block raised, what it held is dropped
            info.pop(_HELD, None)

    def one(self, sql: str, params: Mapping[str, Any]) -> Sequence[Any] | None:
        row: Sequence[Any] | None = self._cursor(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Mapping[str, Any]) -> list[Sequence[Any]]:
        rows: list[Sequence[Any]] = self._cursor(sql, params).fetchall()
        return rows

    def later(self, sql: str, params: Mapping[str, Any]) -> Rows:
        """Send a read now, fetch its rows when the returned function is called (at once on
        SQLite: no round trip to save, and a later write must not change what it sees)."""
        cursor = self._cursor(sql, params)
        if not self._pg:
            rows: list[Sequence[Any]] = cursor.fetchall()
            return lambda: rows
        return cursor.fetchall  # type: ignore[no-any-return]

    def later_as(
        self, sql: str, params: Mapping[str, Any], shape: Callable[[Sequence[Any]], T]
    ) -> Callable[[], list[T]]:
        """`later(sql, params)`, each row made into `shape(row)` when the rows are asked for."""
        rows = self.later(sql, params)
        return lambda: [shape(row) for row in rows()]


def flush_held(info: dict[Any, Any]) -> None:
    """Send the writes `together` holds on this connection (`info`: its SQLAlchemy info), if
    any: one as it is, several as one statement."""
    held: tuple[Any, list[tuple[str, str, Mapping[str, Any]]]] | None = info.get(_HELD)
    if held is None or not held[1]:
        return
    driver, writes = held[0], list(held[1])
    held[1].clear()
    if len(writes) == 1:
        _, sql, params = writes[0]
        _sender(info, driver).execute(_pyformat(sql), params)
        return
    merged = {f"w{i}_{k}": v for i, (_, _, params) in enumerate(writes) for k, v in params.items()}
    _sender(info, driver).execute(_combined(tuple(sql for _, sql, _ in writes)), merged)


def _sender(info: dict[Any, Any], driver: Any) -> Any:
    """The cursor that `send` uses on this driver connection (one per connection)."""
    kept = info.get(_SENDER)
    if kept is None or kept[0] is not driver:  # none yet, or a reconnected driver
        kept = info[_SENDER] = (driver, driver.cursor())
    return kept[1]


def _target(sql: str) -> str:
    found = _TARGET.match(sql)
    if found is None:
        raise ValueError(f"not a write that can be held: {sql[:60]!r}")
    return found.group(1).lower()


@functools.lru_cache(maxsize=256)
def _combined(sqls: tuple[str, ...]) -> str:
    """Several writes as one PostgreSQL statement, each one's `:name` renamed `:w<i>_name`."""
    parts = (f"w{i} AS (" + _NAMED.sub(f":w{i}_" + r"\1", sql) + ")" for i, sql in enumerate(sqls))
    return _pyformat("WITH " + ", ".join(parts) + " SELECT 1")


class Bare:
    """A DB-API connection outside any transaction (`Store.glance`): the same SQL text with
    `:name` placeholders as `Raw`, each statement its own snapshot."""

    __slots__ = ("_driver", "_pg")

    def __init__(self, driver: Any, *, pg: bool) -> None:
        self._driver = driver
        self._pg = pg

    def one(self, sql: str, params: Mapping[str, Any]) -> Sequence[Any] | None:
        row: Sequence[Any] | None = self._driver.execute(
            _pyformat(sql) if self._pg else sql, params
        ).fetchone()
        return row

    def all(self, sql: str, params: Mapping[str, Any]) -> list[Sequence[Any]]:
        rows: list[Sequence[Any]] = self._driver.execute(
            _pyformat(sql) if self._pg else sql, params
        ).fetchall()
        return rows


@functools.lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    """`:name` → `%(name)s` for psycopg (a literal `%` doubled)."""
    return _NAMED.sub(r"%(\1)s", sql.replace("%", "%%"))


@functools.lru_cache(maxsize=256)
def _keyed(sql: str, keys: tuple[tuple[str, str, str], ...], n: int, pg: bool) -> str:
    """SQLite: `... AND column IN (...)` (or `(c1, c2) IN (VALUES ...)`), which its planner
    answers from the index. PostgreSQL: the keys as a `VALUES` list, each one joined `LATERAL`
    to `sql` with `column = key`; `OFFSET 0` keeps the subquery from being flattened, so
    every key is one index lookup on the whole key. The `IN` form was planned, in a generic
    plan cached while the table was new and small, as a scan of the project's rows with
    the list as a filter: a completion read all of its project's artifacts, and kept doing
    so as the table grew (measured: docs/benchmarks.md)."""
    if not pg and len(keys) == 1:
        return sql + f"{keys[0][0]} IN " + in_list(keys[0][1], n)
    rows = ", ".join("(" + ", ".join(f":{name}_{i}" for _, name, _ in keys) + ")" for i in range(n))
    if not pg:
        return sql + "(" + ", ".join(column for column, _, _ in keys) + f") IN (VALUES {rows})"
    slots = ", ".join(f"k{j}" for j in range(len(keys)))
    match = " AND ".join(f"{column} = CAST(k.k{j} AS {kind})" for j, (column, _, kind) in enumerate(keys))
    return f"SELECT r.* FROM (VALUES {rows}) AS k({slots}) CROSS JOIN LATERAL ({sql}{match} OFFSET 0) AS r"


@functools.lru_cache(maxsize=512)
def in_list(name: str, n: int) -> str:
    return "(" + ", ".join(f":{name}_{i}" for i in range(n)) + ")"


def in_params(name: str, values: Iterable[Any]) -> dict[str, Any]:
    return {f"{name}_{i}": v for i, v in enumerate(values)}


def columns(table: Table, alias: str) -> str:
    """The table's columns in declaration order (the order `select(table)` gives)."""
    return ", ".join(f"{alias}.{c.name}" for c in table.c)
