"""PostgreSQL plans of the hot reads: each key is one index lookup on its whole key,
even in a generic plan made while the tables are empty.

psycopg prepares a statement after a few executions and PostgreSQL then keeps a generic plan
for it on that session until the table is analyzed. Planned on a new, small table, `project_id
= $1 AND path IN ($2, $3)` became an index scan on `project_id` alone with the paths as a
filter: every completion read all of its project's artifacts (and the prior-completion join
scanned the project's completions), more with every completion. These tests build exactly
that situation (empty tables, `plan_cache_mode = force_generic_plan`) and read the plans.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy.engine import make_url

from studiolo.store import Store, content, evidence, work
from studiolo.store._raw import _keyed

pytestmark = pytest.mark.postgres

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@pytest.fixture
def conn(pg_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    store = Store(pg_url)
    store.upgrade()
    store.dispose()
    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as c:
        c.execute("SET plan_cache_mode = force_generic_plan")
        yield c


def _generic_plan(conn: psycopg.Connection[tuple[object, ...]], sql: str) -> str:
    """PREPARE `sql` (its `:name`s as `$n`, types inferred) and EXPLAIN a generic EXECUTE."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    conn.execute("DEALLOCATE ALL")
    conn.execute("PREPARE probe AS " + _NAMED.sub(number, sql))
    args = ", ".join("'1'" for _ in names)
    return "\n".join(str(r[0]) for r in conn.execute(f"EXPLAIN EXECUTE probe({args})"))


def _scans(plan: str, table: str) -> list[list[str]]:
    """Each scan node of `table` in an EXPLAIN text: its line and its detail lines."""
    lines, found = plan.splitlines(), []
    for i, line in enumerate(lines):
        if re.search(rf"Scan(?: using \w+)? on {table}\b", line):
            depth, block = len(line) - len(line.lstrip(" ->")), [line]
            for detail in lines[i + 1 :]:
                if "->" in detail or len(detail) - len(detail.lstrip()) <= depth:
                    break
                block.append(detail)
            found.append(block)
    return found


def _assert_looked_up(plan: str, table: str, columns: tuple[str, ...]) -> None:
    scans = _scans(plan, table)
    assert scans, plan
    for block in scans:
        assert "Seq Scan" not in block[0], plan
        conds = [line for line in block if "Index Cond:" in line]
        filters = [line for line in block if "Filter:" in line]
        for column in columns:
            named = re.compile(rf"\b{column}\b")
            assert any(named.search(line) for line in conds), (
                f"{column} is not in an index condition:\n{plan}"
            )
            assert not any(named.search(line) for line in filters), f"{column} is a filter:\n{plan}"


@pytest.mark.parametrize("n", [1, 2, 7])
@pytest.mark.parametrize(
    ("sql", "keys", "table"),
    [
        (content._DECLARED_FILES, (("path", "f", "text"),), "artifacts"),
        (content._DECLARED_DIRS, (("prefix", "d", "text"),), "collections"),
        (content._LIVE_FILES, (("path", "f", "text"),), "artifacts"),
        (content._EVER_DIRS, (("prefix", "d", "text"),), "collections"),
        (
            content._REVISION_DIGESTS,
            (("path", "f", "text"), ("revision", "r", "bigint")),
            "artifact_revisions",
        ),
        (content._DEPLOYED_SINCE, (("o.target", "t", "text"),), "observations"),
        (content._BLOB_REFS_HELD, (("digest", "b", "text"),), "blob_refs"),
    ],
)
def test_each_key_is_an_index_lookup(
    conn: psycopg.Connection[tuple[object, ...]],
    sql: str,
    keys: tuple[tuple[str, str, str], ...],
    table: str,
    n: int,
) -> None:
    plan = _generic_plan(conn, _keyed(sql, keys, n, True))
    _assert_looked_up(plan, table, ("project_id", *(column.split(".")[-1] for column, _, _ in keys)))


def test_the_same_read_as_an_in_list_is_a_filter(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """What the test above guards against, shown on the form it replaced."""
    plan = _generic_plan(conn, content._DECLARED_FILES + "path IN (:f_0, :f_1)")
    assert any("Filter:" in line and re.search(r"\bpath\b", line) for line in plan.splitlines()), plan


def test_the_prior_completion_is_found_on_its_whole_key(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    _assert_looked_up(_generic_plan(conn, work._SUBJECTS_PG), "completions", ("project_id", "request_id"))
    joined = _generic_plan(conn, work._SUBJECTS_SQLITE)  # the plain join, kept for SQLite
    whole = re.compile(r"Index Cond:.*\bproject_id\b.*\brequest_id\b")
    assert not any(whole.search(line) for line in joined.splitlines()), joined


def test_a_tasks_candidates_and_receipts_are_looked_up_by_task(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    """Every task view reads them: without `ix_candidates_task` both scanned the ledger's tables."""
    _assert_looked_up(_generic_plan(conn, content._CANDIDATES_OF_TASK), "candidates", ("task_id",))
    plan = _generic_plan(conn, evidence._RECEIPTS_OF_TASK)
    _assert_looked_up(plan, "candidates", ("task_id",))
    _assert_looked_up(plan, "receipts", ("candidate_id",))
