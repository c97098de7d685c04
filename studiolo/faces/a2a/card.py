"""The Agent Card: one skill per intake template and the task-status skill, bearer security,
the manifest extension (required), signed with the service key (JWS, `alg` EdDSA, over the
RFC 8785 form)."""

from __future__ import annotations

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentCardSignature,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from studiolo import __version__
from studiolo.core.intake import IntakeTemplate
from studiolo.core.remote import MANIFEST_EXTENSION
from studiolo.jws import card_payload, sign_detached
from studiolo.keys import ServiceKey

__all__ = ["STATUS_SKILL", "build_card", "sign_card"]

_BEARER = "bearer"
STATUS_SKILL = "studiolo/task-status"  # no intake template's id: those are "<project id>/<name>"


def build_card(base_url: str, templates: list[IntakeTemplate]) -> AgentCard:
    card = AgentCard(
        name="Studiolo",
        description=(
            "Delegate work to a Studiolo project. A task is COMPLETED only when the project's "
            "completion contract held; its artifacts and a signed manifest arrive first."
        ),
        version=__version__,
        documentation_url=f"{base_url}/docs",
        supported_interfaces=[
            AgentInterface(url=f"{base_url}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base_url}/a2a/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extensions=[
                AgentExtension(
                    uri=MANIFEST_EXTENSION,
                    description="A signed manifest (SHA-256, size) of every artifact, before COMPLETED",
                    required=True,
                )
            ],
        ),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["application/octet-stream", "application/json"],
        skills=[*(_skill(t) for t in templates), _status_skill()],
    )
    scheme = HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="stl_ token")
    card.security_schemes[_BEARER].CopyFrom(SecurityScheme(http_auth_security_scheme=scheme))
    requirement = SecurityRequirement()
    requirement.schemes[_BEARER].CopyFrom(StringList())
    card.security_requirements.append(requirement)
    return card


def _skill(t: IntakeTemplate) -> AgentSkill:
    return AgentSkill(
        id=t.skill_id,
        name=t.name,
        description=t.description or f"work under the {t.name} contract of project {t.project_id}",
        tags=["studiolo", t.project_id],
        input_modes=["text/plain", "application/json"],
        output_modes=["application/octet-stream", "application/json"],
    )


def _status_skill() -> AgentSkill:
    return AgentSkill(
        id=STATUS_SKILL,
        name="Is this task done?",
        description=(
            "The ledger's answer for one Studiolo task the caller may read: its status, the "
            "strongest fact established for it, and the signed completion record once the "
            "completion contract held. Name the task by its id as the text, or as "
            '{"task_id": ...} in a data part. Answered at once with a message, not a task.'
        ),
        tags=["studiolo", "status"],
        examples=["tsk_5f0c2d9e6a7b41c8"],
        input_modes=["text/plain", "application/json"],
        output_modes=["application/json", "text/plain"],
    )


def sign_card(card: AgentCard, key: ServiceKey) -> AgentCard:
    signature = sign_detached(key, card_payload(card))
    card.signatures.append(AgentCardSignature(**signature))
    return card
