from __future__ import annotations

import pytest

from studiolo.study import StudyResult, run_model


@pytest.fixture(scope="session")
def study_result() -> StudyResult:
    """One full model run (87,022 + 91 executions) shared by the whole session."""
    return run_model()
