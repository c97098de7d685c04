"""Resources (the project's current policy, each task's contract) and the `work-on-task`
prompt: what a model reads to learn the rules before it acts."""

from __future__ import annotations

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from studiolo._exceptions import InvalidRequest, NotFound, StudioloError
from studiolo.faces.mcp.tools import PortFor

__all__ = ["POLICY_URI", "PROMPT", "PROMPT_NAME", "TASK_CONTRACT_URI", "Guide"]

POLICY_URI = "studiolo://projects/{project_id}/policy"
TASK_CONTRACT_URI = "studiolo://tasks/{task_id}/contract"
PROMPT_NAME = "work-on-task"
PROMPT = """\
You are working on Studiolo task {task_id}. Studiolo records a task as completed only when
its completion contract holds at one atomic commit; nothing you say makes it done.

1. `orient`, then `get_task {task_id}`: read the policy, the criteria and the scope.
2. `claim_task`: keep the attempt id and the contract hash; `heartbeat` before the lease ends.
3. Read what you need (`checkout` a directory over stdio, or `read_artifact`); keep the revisions.
4. Change only paths in scope; submit with `submit_workspace` (stdio) or `submit_candidate` (with
   the base revision of each path you write and the revisions of what you read).
5. Wait for receipts (`get_receipts`), then `complete_task` with the contract hash.
6. A refusal lists every failed predicate with a hint: follow the hints (often claim again,
   check out again, rebase, resubmit). If you stop, `leave_handoff` for the next agent.
"""


class Guide:
    def __init__(self, port_for: PortFor) -> None:
        self.port_for = port_for

    def register(self, server: MCPServer) -> None:
        server.resource(POLICY_URI, name="policy", mime_type="text/plain")(self.policy)
        server.resource(TASK_CONTRACT_URI, name="task-contract", mime_type="application/json")(self.contract)
        server.prompt(name=PROMPT_NAME)(work_on_task)

    def policy(self, project_id: str, ctx: Context) -> str:
        """The project's current policy text (new tasks pin it; a task keeps the version it pinned)."""
        try:
            o = self.port_for(ctx).orientation()
        except StudioloError as exc:
            raise _resource_error(exc) from exc
        if o.project_id != project_id:
            raise ResourceNotFoundError(f"project {project_id} not found")
        if o.policy is None:
            return ""
        return o.policy.text

    def contract(self, task_id: str, ctx: Context) -> str:
        """A task's pinned contract: criteria, scope, policy version and its hash."""
        try:
            task = self.port_for(ctx).task(task_id).task
        except StudioloError as exc:
            raise _resource_error(exc) from exc
        body = {"task_id": task.id, "contract_hash": task.contract_hash, **task.contract.model_dump()}
        return json.dumps(body, indent=2, sort_keys=True)


def work_on_task(task_id: str) -> str:
    """How to work on a Studiolo task through these tools, in six steps."""
    return PROMPT.format(task_id=task_id)


def _resource_error(exc: StudioloError) -> ResourceError:
    """An absent, invisible or malformed id is `-32602` (invalid params); anything else `-32603`."""
    if isinstance(exc, (NotFound, InvalidRequest)):
        return ResourceNotFoundError(f"{exc.reason}: {exc.detail}")
    return ResourceError(f"{exc.reason}: {exc.detail}")
