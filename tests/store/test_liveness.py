"""Attempt liveness is one rule (`core.lease.is_live`); the store's conditional lease update
says it in SQL (`store.work.LIVE_ATTEMPT_SQL`). On both back-ends, for any attempts and any
moment, the SQL selects exactly the attempts the function calls live (boundaries included:
a deadline equal to now is past, another incarnation's lease is dead)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studiolo.core.enums import AttemptStatus
from studiolo.core.lease import is_live
from studiolo.core.model import Attempt
from studiolo.store.work import LIVE_ATTEMPT_SQL

INCARNATIONS = ["inc_a", "inc_b", ""]
MOMENTS = st.sampled_from([0.0, 1.0, 1.5, 2.0, 1e9]) | st.floats(0, 3, allow_nan=False)


@pytest.fixture
def engine(store_url: str) -> Iterator[sa.Engine]:
    eng = sa.create_engine(store_url)
    yield eng
    eng.dispose()


def _attempt(n: int, status: AttemptStatus, incarnation: str, deadline: float) -> Attempt:
    return Attempt(f"att_{n}", "tsk_x", "prn_x", n, deadline, incarnation, status, 0.0)


ATTEMPTS = st.lists(
    st.tuples(st.sampled_from(list(AttemptStatus)), st.sampled_from(INCARNATIONS), MOMENTS),
    min_size=1,
    max_size=8,
).map(lambda rows: [_attempt(n, *row) for n, row in enumerate(rows)])


def _live_in_sql(engine: sa.Engine, attempts: list[Attempt], incarnation: str, now: float) -> set[str]:
    rows = ", ".join(f"(:id{n}, :s{n}, :i{n}, CAST(:d{n} AS FLOAT))" for n in range(len(attempts)))
    sql = (
        f"WITH attempts (id, status, incarnation, lease_deadline) AS (VALUES {rows})"
        f" SELECT id FROM attempts WHERE {LIVE_ATTEMPT_SQL}"
    )
    params: dict[str, object] = {"incarnation": incarnation, "now": now}
    for n, a in enumerate(attempts):
        params |= {f"id{n}": a.id, f"s{n}": a.status.value, f"i{n}": a.incarnation, f"d{n}": a.lease_deadline}
    with engine.connect() as conn:
        return {row[0] for row in conn.execute(sa.text(sql), params)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=ATTEMPTS, incarnation=st.sampled_from(INCARNATIONS), now=MOMENTS)
def test_the_sql_and_the_function_agree_on_which_attempts_are_live(
    engine: sa.Engine, attempts: list[Attempt], incarnation: str, now: float
) -> None:
    expected = {a.id for a in attempts if is_live(a, incarnation, now)}
    assert _live_in_sql(engine, attempts, incarnation, now) == expected


def test_liveness_boundaries() -> None:
    live = _attempt(1, AttemptStatus.ACTIVE, "inc_a", 2.0)
    assert is_live(live, "inc_a", 1.999)
    assert not is_live(live, "inc_a", 2.0)  # the deadline itself is past
    assert not is_live(live, "inc_b", 1.0)  # a restore ends every older lease
    assert not is_live(_attempt(2, AttemptStatus.RELEASED, "inc_a", 2.0), "inc_a", 1.0)
