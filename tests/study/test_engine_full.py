"""The whole engine run: 87,022 + 91 decisions through the real door, on both cores.

It takes minutes (264 s to 350 s of CPU measured: 2½ to 3 minutes on two idle cores, 3 to 5
when they are shared). ``make test`` runs it (it sets STUDIOLO_ENGINE_STUDY=1;
``STUDIOLO_ENGINE_STUDY=0 make test`` leaves it out); with pytest alone:
``STUDIOLO_ENGINE_STUDY=1 pytest tests/study/test_engine_full.py``.
``test_engine_decisions.py`` runs a sample of the same schedules on every test run.
"""

from __future__ import annotations

import os

import pytest

from studiolo.study.engine import check_engine_results, run_engine, shipped_engine_results

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("STUDIOLO_ENGINE_STUDY") != "1",
        reason="the whole engine study (minutes) runs with STUDIOLO_ENGINE_STUDY=1, as `make test` sets it",
    ),
]


def test_the_whole_engine_run_meets_the_spec_and_is_the_shipped_file() -> None:
    result = run_engine()
    row = result.study.row("full-atomic")
    assert (row.safe_accept, row.unsafe_accept, row.safe_reject, row.eligible_reject) == (470, 0, 6224, 0)
    assert result.oracle_agreement == 6694, "every full-atomic decision equals the oracle's label"
    assert result.differences_explained and result.ok
    outcome = check_engine_results(shipped_engine_results(), result=result)
    assert outcome.ok, outcome.message
