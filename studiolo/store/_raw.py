"""Prepared SQL on the DB-API connection under a SQLAlchemy `Connection`: the hot paths.

SQLAlchemy's execution machinery costs tens of microseconds a statement; the completion
transaction runs a dozen statements. Its hot statements are plain SQL text that SQLite and
PostgreSQL read alike, written once with `:name` placeholders and run on the driver's own
connection, inside the transaction SQLAlchemy opened: `sqlite3` caches each statement
compiled, psycopg 3 prepares it on the server after a few executions.

In a pipelined PostgreSQL write, `later(sql, params)` sends a read and fetches its rows only
when they are asked for: reads sent one after another travel in one round trip.

`in_list(name, n)` spells `IN (...)` with `n` numbered placeholders (`:name_0, ...`).
`Raw.keyed(sql, keys, n)` restricts a read to `n` exact keys so that PostgreSQL looks each one
up in the index whatever its statistics say (see `_keyed`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Connection, Table

__all__ = ["PIPELINE", "Bare", "Raw", "Rows", "columns", "in_list", "in_params"]

Rows = Callable[[], list[Sequence[Any]]]  # a read's rows, fetched when called
T = TypeVar("T")

PIPELINE = "studiolo_pipeline"  # connection info key: the psycopg pipeline a write runs in
_SENDER = "studiolo_sender"  # connection info key: (driver connection, the cursor of `send`)

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
        _sender(info, driver).execute(_pyformat(sql) if self._pg else sql, params)

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


def _sender(info: dict[Any, Any], driver: Any) -> Any:
    """The cursor that `send` uses on this driver connection (one per connection)."""
    kept = info.get(_SENDER)
    if kept is None or kept[0] is not driver:  # none yet, or a reconnected driver
        kept = info[_SENDER] = (driver, driver.cursor())
    return kept[1]


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
