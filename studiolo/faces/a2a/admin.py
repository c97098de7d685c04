"""The admin API of the A2A face: define and list a project's intake templates."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from studiolo._exceptions import StudioloError
from studiolo.api.requests import IntakeIn, invalid_request
from studiolo.core.intake import IntakeTemplate
from studiolo.service import Coordinator

__all__ = ["admin_routes"]

_PRINCIPAL = "studiolo.principal"
_BASE = "/admin/projects/{project_id}/intakes"


def admin_routes(door: Coordinator) -> list[Route]:
    async def put_intake(request: Request) -> JSONResponse:
        """`PUT …/intakes/{name}` with an `IntakeIn` body (admin)."""
        try:
            body = _intake(await request.body())
            template = await run_in_threadpool(
                lambda: door.define_intake(
                    request.scope[_PRINCIPAL],
                    request.path_params["project_id"],
                    request.path_params["name"],
                    description=body.description,
                    criteria=body.criteria,
                    scope=body.scope,
                    policy_version=body.policy_version,
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


def _intake(raw: bytes) -> IntakeIn:
    """The body, validated by the model the client sends (`InvalidRequest`, 422, if not)."""
    try:
        return IntakeIn.model_validate_json(raw)
    except ValidationError as exc:
        raise invalid_request(exc.errors()) from None


def _out(t: IntakeTemplate) -> dict[str, Any]:
    return {"skill": t.skill_id, "name": t.name, "description": t.description, **t.contract_json()}
