"""`bench/soak.py` in short mode: replicas killed with SIGKILL during the load (and, on a
private PostgreSQL cluster, the database restarted), then the independent checker finds
nothing: every answered completion recorded once, chains recompute, fences never go back."""

from __future__ import annotations

import pytest

from bench import soak

_SHORT = ["--seconds", "12", "--replicas", "2", "--processes", "1", "--clients", "6", "--readers", "1"]
_SHORT += ["--kill-every", "2", "--tasks", "150", "--drain", "5"]


def _healthy(result: dict[str, object]) -> None:
    assert result["problems"] == [], result
    assert result["fault_errors"] == [], result  # every killed replica came back
    assert isinstance(result["completions_accepted"], int) and result["completions_accepted"] > 0, result
    streams = result["streams"]
    assert isinstance(streams, dict) and streams["0"]["events"] > 0, result  # checked: no gap, no duplicate


@pytest.mark.slow
def test_a_short_soak_on_sqlite_keeps_the_contract_while_replicas_are_killed() -> None:
    result = soak.main(["--sqlite", *_SHORT])
    _healthy(result)
    assert isinstance(result["replica_kills"], int) and result["replica_kills"] >= 2, result
    kills = result["kills_aimed_at_open_completions"]
    assert isinstance(kills, dict) and kills["aimed"] >= 1, result  # a completion was open on the victim


@pytest.mark.slow
@pytest.mark.skipif(not soak.PrivatePostgres.available(), reason="initdb and pg_ctl are not installed")
def test_a_short_soak_on_postgres_survives_a_database_restart() -> None:
    result = soak.main([*_SHORT, "--pg-restarts", "1"])
    _healthy(result)
    assert result["pg_restarts"] == 1, result
