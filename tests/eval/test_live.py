"""`studiolo eval --live`: agents in their own processes with their own tokens, each through
its own fault-injecting proxy, against the real server; the oracle reads the audit log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from studiolo.eval.live import LiveConfig, run_live
from studiolo.eval.oracle import label_decisions
from studiolo.eval.proxy import Faults

STANDIN = f"{sys.executable} -m studiolo.eval.live_mcp_agent"  # a user's agent: only the MCP config
# deadline_s is a guard against a hung run, not a timing claim


@pytest.mark.slow
def test_an_mcp_and_an_http_agent_through_faults_accept_nothing_ineligible(
    small_repo: tuple[Path, str],
) -> None:
    repo, until = small_repo
    faults = Faults(latency_ms=(0, 10), stall=0.05, stall_seconds=0.3, reset=0.1, cut=0.03)
    result = run_live(LiveConfig(str(repo), until, 3, seed=2, faults=faults, deadline_s=900))
    assert result["agent_exit_codes"] == [0, 0], result["agent_stderr"]
    assert result["audit_chain_ok"]
    assert result["completed"] == result["tasks"] == 3
    assert result["unsafe_accept"] == 0, result["unsafe"]
    assert sum(p["connections"] for p in result["proxies"]) >= 2
    labels = label_decisions(result["trace"])
    accepted = [r for r in result["trace"] if r["kind"] == "decision" and r["accepted"]]
    assert len(accepted) == 3 and all(labels[d["seq"]].eligible for d in accepted)


@pytest.mark.slow
def test_a_users_agent_command_works_over_mcp_stdio(small_repo: tuple[Path, str]) -> None:
    repo, until = small_repo
    config = LiveConfig(
        str(repo),
        until,
        3,
        seed=3,
        agents=1,
        edits=0,
        faults=Faults(reset=0.0, cut=0.0),
        agent_cmd=STANDIN,
        deadline_s=900,
    )
    result = run_live(config)
    assert result["agent_exit_codes"] == [0]
    assert result["unsafe_accept"] == 0
    assert result["accepted_by"] == {"agent-0": 3}
