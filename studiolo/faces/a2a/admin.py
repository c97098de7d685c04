"""The admin API of the A2A face: define and list a project's intake templates."""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from studiolo._exceptions import InvalidRequest, StudioloError
from studiolo.core.intake import IntakeTemplate
from studiolo.service import Coordinator

__all__ = ["admin_routes"]

_PRINCIPAL = "studiolo.principal"
_BASE = "/admin/projects/{project_id}/intakes"


def admin_routes(door: Coordinator) -> list[Route]:
    async def put_intake(request: Request) -> JSONResponse:
        """`PUT …/intakes/{name}` `{description, criteria, scope, policy_version?}` (admin)."""
        try:
            body = _object(await request.body())
            template = await run_in_threadpool(
                lambda: door.define_intake(
                    request.scope[_PRINCIPAL],
                    request.path_params["project_id"],
                    request.path_params["name"],
                    description=str(body.get("description", "")),
                    criteria=body.get("criteria") or {},
                    scope=body.get("scope") or [],
                    policy_version=body.get("policy_version"),
                )
            )
        except StudioloError as exc:
            return JSONResponse(exc.to_dict(), status_code=exc.status)
        return JSONResponse(_out(template))

    async def list_intakes(request: Request) -> JSONResponse:
        try:
            rows = await run_in_threadpool(
                door.intakes, request.scope[_PRINCIPAL], request.path_params["project_id"]
            )
        except StudioloError as exc:
            return JSONResponse(exc.to_dict(), status_code=exc.status)
        return JSONResponse([_out(t) for t in rows])

    return [
        Route(_BASE, list_intakes, methods=["GET"]),
        Route(_BASE + "/{name}", put_intake, methods=["PUT"]),
    ]


def _object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InvalidRequest("the body is a JSON object") from exc
    if not isinstance(value, dict):
        raise InvalidRequest("the body is a JSON object")
    return value


def _out(t: IntakeTemplate) -> dict[str, Any]:
    return {"skill": t.skill_id, "name": t.name, "description": t.description, **t.contract_json()}
