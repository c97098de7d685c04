"""`studiolo eval --live`: the full contract as shipped, with agents in their own processes.

The service (uvicorn in a thread over a fresh SQLite ledger, the real clock), the verifier
(the real `Runner`, in a thread) and the authority (a thread: a revocation and a re-grant, a
policy publication, human edits from later commits) share this process; each agent is its
own process with its own token, reaching the service only through its own seeded
fault-injecting proxy (`proxy.py`): the scripted HTTP agent (`live_agent.py`), or the user's
own command (`--agent-cmd`, given its workspace and an MCP configuration). Afterwards the
trace is rebuilt from the audit log alone (`audit_trace.py`) and the oracle labels every
accepted completion; the audit chains are verified.
"""

from __future__ import annotations

import base64
import json
import random
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studiolo._exceptions import StudioloError
from studiolo.core.model import FileMode, Principal
from studiolo.eval.audit_trace import trace_from_audit
from studiolo.eval.live_agent import LIVE_AGENT_VERSION
from studiolo.eval.oracle import label_decisions
from studiolo.eval.proxy import FaultProxy, Faults
from studiolo.eval.workload import Workload, apply_change, load_workload, suite_argv
from studiolo.faces.http.server import ServerThread
from studiolo.keys import new_private_key, public_key_text
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.verifier import InProcessPort, Isolation, Limits, Runner

__all__ = ["LiveConfig", "run_live"]


@dataclass(frozen=True)
class LiveConfig:
    repository: str
    until: str
    tasks: int
    seed: int = 1
    agents: int = 2
    edits: int = 2
    lease: float = 20.0
    deadline_s: float = 300.0
    faults: Faults = field(default_factory=Faults)
    agent_cmd: str | None = None
    unsafe_no_isolation: bool = False


@dataclass
class _Live:
    coord: Coordinator
    project_id: str
    admin: Principal
    human: Principal
    agents: list[tuple[Principal, str, str]]  # principal, token, work grant id
    task_ids: list[str]
    log: list[dict[str, Any]] = field(default_factory=list)


def run_live(config: LiveConfig, progress: Callable[[str], None] = lambda _l: None) -> dict[str, Any]:
    """Run once; the results (counts, the oracle's verdict, what the proxies did) and the trace."""
    workload = load_workload(config.repository, config.until, config.tasks, config.edits)
    isolation = None if config.unsafe_no_isolation else Isolation.probe(Limits().run_as)
    with tempfile.TemporaryDirectory(prefix="studiolo-live-") as tmp:
        store = Store(Settings.sqlite_url(Path(tmp) / "live.db"))
        settings = Settings(database_url=store.url)
        coord = Coordinator(store, settings)
        key = new_private_key()
        live = _set_up(coord, workload, config, public_key_text(key))
        start = time.time()
        stop = threading.Event()
        port = InProcessPort(coord, _verifier(coord, live), live.project_id)
        runner = Runner(port, key, isolation=isolation, unsafe_no_isolation=isolation is None)
        threads = [
            threading.Thread(target=runner.run_forever, args=(0.2, stop), daemon=True),
            threading.Thread(target=_authority, args=(live, workload, config, start, stop), daemon=True),
        ]
        with ServerThread(coord, settings) as server:
            host, port_no = server.url.removeprefix("http://").split(":")
            proxies = [
                FaultProxy((host, int(port_no)), config.seed * 100 + i, config.faults)
                for i in range(config.agents)
            ]
            for p in proxies:
                p.__enter__()
            for t in threads:
                t.start()
            try:
                codes = _run_agents(live, workload, config, proxies, Path(tmp), progress)
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=30)
                for p in proxies:
                    p.__exit__(None, None, None)
            wall = time.time() - start
            logs = [_read_log(Path(tmp) / f"agent-{i}" / "log.jsonl") for i in range(config.agents)]
            stderr = [
                (Path(tmp) / f"agent-{i}" / "stderr.txt").read_text(errors="replace")[-2000:]
                for i in range(config.agents)
            ]
        events = _events(coord, live)
        audit = coord.verify_audit()
        header = {
            "live": True,
            "agents": LIVE_AGENT_VERSION,
            "seed": config.seed,
            "workload": workload.pins(),
        }
        trace = trace_from_audit(events, start, header)
        result = _results(config, workload, trace, logs, proxies, codes, audit.ok, wall)
        result["trace"] = trace
        result["agent_stderr"] = stderr
        store.dispose()
        return result


def _set_up(coord: Coordinator, workload: Workload, config: LiveConfig, verifier_key: str) -> _Live:
    issued = coord.initialize()
    assert issued is not None
    admin = issued.principal
    pid = coord.create_project(admin, "eval-live").id
    agents = []
    for i in range(config.agents):
        got = coord.add_principal(admin, pid, f"agent-{i}", "agent")
        coord.grant(admin, pid, got.principal.id, ["read"], ["**"])
        work = coord.grant(admin, pid, got.principal.id, ["write", "claim", "complete"], ["**"])
        agents.append((got.principal, got.token, work.id))
    human = coord.add_principal(admin, pid, "editor", "human").principal
    coord.grant(admin, pid, human.id, ["read", "write"], ["**"])
    ci = coord.add_principal(admin, pid, "ci", "verifier", verifier_key).principal
    coord.grant(admin, pid, ci.id, ["read", "verify"], ["**"])
    coord.publish_policy(admin, pid, "Behaviour v1: make the commit's change; run the suite.")
    argv = suite_argv(set(workload.base_files))
    coord.register_checker(admin, pid, "suite", "1", "command", {"argv": argv, "timeout": 300}, [ci.id])
    files = {p: (coord.put_blob(admin, d), FileMode.REGULAR) for p, d in workload.base_files.items()}
    coord.import_tree(admin, pid, files, {"commit": workload.base, "ref": "base"})
    task_ids = [
        coord.create_task(
            admin, pid, f"{t.commit[:10]} {t.title}"[:300], criteria={"suite": "suite@1"}, scope=list(t.paths)
        ).id
        for t in workload.tasks
    ]
    return _Live(coord, pid, admin, human, agents, task_ids)


def _verifier(coord: Coordinator, live: _Live) -> Principal:
    return next(p for p in coord.principals(live.admin, live.project_id) if p.name == "ci")


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _workspace(live: _Live, workload: Workload, config: LiveConfig, index: int, root: Path) -> Path:
    ws = root / f"agent-{index}"
    ws.mkdir()
    tasks = [
        {
            "index": t.index,
            "task_id": live.task_ids[t.index],
            "paths": list(t.paths),
            "before": {p: _b64(t.before[p]) for p in t.paths},
            "after": {p: _b64(t.after[p]) for p in t.paths},
        }
        for t in workload.tasks
    ]
    config_doc = {
        "name": f"agent-{index}",
        "lease": config.lease,
        "deadline_s": config.deadline_s,
        "tasks": tasks,
    }
    (ws / "agent.json").write_text(json.dumps(config_doc), encoding="utf-8")
    return ws


def _run_agents(
    live: _Live,
    workload: Workload,
    config: LiveConfig,
    proxies: list[FaultProxy],
    root: Path,
    progress: Callable[[str], None],
) -> list[int | None]:
    procs = []
    for i, (_principal, token, _grant) in enumerate(live.agents):
        ws = _workspace(live, workload, config, i, root)
        env = {
            "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
            "HOME": str(ws),
            "STUDIOLO_URL": proxies[i].url,
            "STUDIOLO_TOKEN": token,
            "STUDIOLO_PROJECT": live.project_id,
            "STUDIOLO_EVAL_WORKSPACE": str(ws),
        }
        mcp = {
            "mcpServers": {
                "studiolo": {
                    "command": sys.executable,
                    "args": [
                        "-c",
                        "from studiolo.faces.cli import main; main()",
                        "mcp",
                        "--workdir",
                        str(ws),
                    ],
                    "env": {
                        **{k: env[k] for k in ("STUDIOLO_URL", "STUDIOLO_TOKEN", "STUDIOLO_PROJECT", "HOME")},
                        "STUDIOLO_CONFIG": str(ws / "none.toml"),
                    },
                }
            }
        }
        (ws / "mcp.json").write_text(json.dumps(mcp), encoding="utf-8")
        env["STUDIOLO_EVAL_MCP_CONFIG"] = str(ws / "mcp.json")
        if config.agent_cmd and i == 0:
            argv = [*shlex.split(config.agent_cmd), str(ws)]
        else:  # the first agent over MCP stdio, the others over the HTTP client
            module = "studiolo.eval.live_mcp_agent" if i == 0 else "studiolo.eval.live_agent"
            argv = [sys.executable, "-m", module, str(ws)]
        with (ws / "stderr.txt").open("wb") as err:  # the child holds its own copy
            procs.append(subprocess.Popen(argv, env=env, cwd=ws, stdout=subprocess.DEVNULL, stderr=err))
        progress(f"agent-{i}: {' '.join(argv[:3])} … via {proxies[i].url}")
    codes: list[int | None] = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=config.deadline_s + 60))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes.append(None)
    return codes


def _authority(
    live: _Live, workload: Workload, config: LiveConfig, start: float, stop: threading.Event
) -> None:
    """Seeded wall-clock times: revoke agent 0's work grant, re-grant 4 s later, publish a
    policy, and the human edits (skipped on a merge conflict)."""
    rng = random.Random(f"studiolo-eval-live-authority:{config.seed}")
    c, pid = live.coord, live.project_id
    principal, _token, grant_id = live.agents[0]
    revoke = rng.uniform(3, 12)
    plan: list[tuple[float, str, int]] = [
        (revoke, "revoke", 0),
        (revoke + 4, "regrant", 0),
        (rng.uniform(2, 20), "policy", 0),
    ]
    plan += [(rng.uniform(2, 25), "edit", i) for i in range(len(workload.human_edits))]
    for at, action, arg in sorted(plan):
        if stop.wait(max(0.0, start + at - time.time())):
            return
        try:
            if action == "revoke":
                c.revoke_grant(live.admin, grant_id)
            elif action == "regrant":
                c.grant(live.admin, pid, principal.id, ["write", "claim", "complete"], ["**"])
            elif action == "policy":
                c.publish_policy(live.admin, pid, "Behaviour v2: new defaults for tasks created from now on.")
            else:
                _human_edit(live, workload, arg)
        except StudioloError as refused:
            live.log.append({"action": action, "refused": refused.reason})
            continue
        except _NoMerge:
            live.log.append({"action": action, "skipped": "the later commit's change does not merge"})
            continue
        live.log.append({"action": action, "at": round(time.time() - start, 3)})


class _NoMerge(Exception):
    """A later commit's change does not merge on the file as the ledger holds it: skipped."""


def _human_edit(live: _Live, workload: Workload, index: int) -> None:
    edit, c = workload.human_edits[index], live.coord
    current = c.read_artifact(live.human, live.project_id, edit.path)
    merged = apply_change(edit.before, edit.after, current.data)
    if not isinstance(merged, bytes):
        raise _NoMerge(edit.path)
    c.edit_artifact(
        live.human, live.project_id, edit.path, c.put_blob(live.human, merged), current.artifact.revision
    )


def _events(coord: Coordinator, live: _Live) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = 0
    while batch := coord.events(live.admin, live.project_id, after=after, limit=200):
        out += [
            {
                "seq": e.seq,
                "kind": e.kind,
                "actor": e.actor,
                "subject": e.subject,
                "data": dict(e.data),
                "at": e.at,
            }
            for e in batch
        ]
        after = batch[-1].seq
    return out


def _read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _results(
    config: LiveConfig,
    workload: Workload,
    trace: list[dict[str, Any]],
    logs: list[list[dict[str, Any]]],
    proxies: list[FaultProxy],
    codes: list[int | None],
    audit_ok: bool,
    wall: float,
) -> dict[str, Any]:
    labels = label_decisions(trace)
    decisions = [r for r in trace if r["kind"] == "decision"]
    accepted = [d for d in decisions if d["accepted"]]
    unsafe = [
        {"request": d["request"], "violated": list(labels[d["seq"]].violated)}
        for d in accepted
        if not labels[d["seq"]].eligible
    ]
    ms = [e["ms"] for log in logs for e in log if e["op"] in ("accepted", "refused") and "ms" in e]
    ms.sort()
    return {
        "config": {
            "repository": Path(config.repository).name,
            "until": config.until,
            "tasks": config.tasks,
            "seed": config.seed,
            "agents": config.agents,
            "agent_cmd": config.agent_cmd,
            "faults": vars(config.faults),
        },
        "tasks": len(workload.tasks),
        "completed": len({d["task"] for d in accepted}),
        "decisions": len(decisions),
        "accepted": len(accepted),
        "unsafe_accept": len(unsafe),
        "unsafe": unsafe,
        "accepted_by": _accepted_by(trace, accepted),
        "replays": sum(1 for log in logs for e in log if e.get("replay")),
        "transport_retries": sum(1 for log in logs for e in log if e["op"] == "transport-retry"),
        "proxies": [p.summary() for p in proxies],
        "agent_exit_codes": codes,
        "audit_chain_ok": audit_ok,
        "timing": {
            "wall_s": round(wall, 1),
            "complete_ms_p50": ms[len(ms) // 2] if ms else None,
            "complete_ms_max": ms[-1] if ms else None,
        },
    }


def _accepted_by(trace: list[dict[str, Any]], accepted: list[dict[str, Any]]) -> dict[str, int]:
    names = {r["principal"]: r["name"] for r in trace if r["kind"] == "principal"}
    out: dict[str, int] = {}
    for d in accepted:
        name = str(names.get(d["caller"], d["caller"]))
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))
