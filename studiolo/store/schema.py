"""The ledger's tables (SQLAlchemy Core). Portable SQL: SQLite and PostgreSQL alike."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = ["metadata"]

# Named constraints: Alembic can then alter them on SQLite (batch mode) and PostgreSQL alike.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

ID = 64  # ids are short random strings with a type prefix

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

projects = Table(
    "projects",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
)

principals = Table(
    "principals",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=True),
    Column("name", String(200), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("public_key", String(200), nullable=True),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("project_id", "name", name="uq_principal_name"),
)

tokens = Table(
    "tokens",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("principal_id", String(ID), ForeignKey("principals.id"), nullable=False),
    Column("token_hash", String(80), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
    # Set by a restore that could not vouch for the token: dead until reconfirmed (backup.py).
    Column("held_at", Float, nullable=True),
    Index("ix_tokens_principal", "principal_id"),  # a rotation or revocation finds the principal's tokens
)

grants = Table(
    "grants",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("principal_id", String(ID), ForeignKey("principals.id"), nullable=False),
    Column("actions", Text, nullable=False),  # JSON list
    Column("scope", Text, nullable=False),  # JSON list of patterns
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
    Index("ix_grants_principal", "principal_id"),
    Index("ix_grants_project", "project_id", "created_at"),  # a project's grants, in order
)

policies = Table(
    "policies",
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("text", Text, nullable=False),
    Column("digest", String(80), nullable=False),
    Column("created_at", Float, nullable=False),
)

checkers = Table(
    "checkers",
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("name", String(100), primary_key=True),
    Column("version", String(50), primary_key=True),
    Column("kind", String(50), nullable=False),
    Column("config", Text, nullable=False),  # JSON object
    Column("verifiers", Text, nullable=False),  # JSON list of principal ids
    Column("created_at", Float, nullable=False),
)

# Verifier admissions a restore could not vouch for (`store/authority.py`): taken out of
# `checkers.verifiers` until an admin reconfirms the verifier.
held_admissions = Table(
    "held_admissions",
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("checker", String(200), primary_key=True),  # name@version
    Column("verifier_id", String(ID), ForeignKey("principals.id"), primary_key=True),
    Column("held_at", Float, nullable=False),
    Index("ix_held_admissions_verifier", "verifier_id"),
)

tasks = Table(
    "tasks",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("title", String(300), nullable=False),
    Column("description", Text, nullable=False),
    Column("contract", Text, nullable=False),  # canonical JSON
    Column("contract_hash", String(80), nullable=False),
    Column("status", String(16), nullable=False),
    Column("current_attempt_id", String(ID), nullable=True),
    Column("fence", BigInteger, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("completed_at", Float, nullable=True),
    Index("ix_tasks_project_status", "project_id", "status"),
    Index("ix_tasks_project_created", "project_id", "created_at", "id"),  # a page of tasks, in order
)

attempts = Table(
    "attempts",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("task_id", String(ID), ForeignKey("tasks.id"), nullable=False),
    Column("principal_id", String(ID), ForeignKey("principals.id"), nullable=False),
    Column("fence", BigInteger, nullable=False),
    Column("lease_deadline", Float, nullable=False),
    Column("incarnation", String(ID), nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("task_id", "fence", name="uq_attempt_fence"),
)

blobs = Table(
    "blobs",
    metadata,
    Column("digest", String(80), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("created_at", Float, nullable=False),
)

blob_refs = Table(
    "blob_refs",  # which projects may read a blob: one that uploaded or published it
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("digest", String(80), primary_key=True),
)

artifacts = Table(
    "artifacts",
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("path", String(1100), primary_key=True),
    Column("revision", BigInteger, nullable=False),
    Column("digest", String(80), nullable=True),  # NULL: tombstone
    Column("updated_at", Float, nullable=False),
    Column("mode", String(16), nullable=False, server_default="regular"),  # or "executable"
)

artifact_revisions = Table(
    "artifact_revisions",
    metadata,
    Column("project_id", String(ID), primary_key=True),
    Column("path", String(1100), primary_key=True),
    Column("revision", BigInteger, primary_key=True),
    Column("digest", String(80), nullable=True),
    Column("changed_at", Float, nullable=False),
    Column("actor", String(ID), nullable=True),
    Column("cause", String(80), nullable=False),  # "edit" or a completion id
    Column("mode", String(16), nullable=False, server_default="regular"),  # or "executable"
)

collections = Table(
    "collections",
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("prefix", String(1100), primary_key=True),  # "" is the root, else "dir/"
    Column("revision", BigInteger, nullable=False),
)

candidates = Table(
    "candidates",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("task_id", String(ID), ForeignKey("tasks.id"), nullable=False),
    Column("attempt_id", String(ID), ForeignKey("attempts.id"), nullable=False),
    Column("manifest", Text, nullable=False),  # canonical JSON
    Column("digest", String(80), nullable=False),
    Column("dependency_digest", String(80), nullable=False),
    Column("created_at", Float, nullable=False),
    # JSON: written path → mode, executable paths only (migration 0015)
    Column("modes", Text, nullable=False, server_default="{}"),
    Index("ix_candidates_attempt", "attempt_id"),
    Index("ix_candidates_task", "task_id", "created_at", "id"),  # a task view's candidates and their receipts
)

receipts = Table(
    "receipts",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("candidate_id", String(ID), ForeignKey("candidates.id"), nullable=False),
    Column("body", Text, nullable=False),  # the signed canonical JSON
    Column("signature", String(200), nullable=False),
    Column("issuer_id", String(ID), nullable=False),
    Column("reused_from", String(ID), nullable=True),
    Column("created_at", Float, nullable=False),
    # The kid of the issuer's key that verified the signature at ingest (docs/verifiers.md).
    Column("issuer_kid", String(16), nullable=True),
    Index("ix_receipts_candidate", "candidate_id"),
)

completions = Table(
    "completions",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("task_id", String(ID), ForeignKey("tasks.id"), nullable=False, unique=True),
    Column("attempt_id", String(ID), nullable=False),
    Column("candidate_id", String(ID), nullable=False),
    Column("request_id", String(200), nullable=False),
    Column("request_digest", String(80), nullable=False),
    Column("principal_id", String(ID), nullable=False),
    Column("commit_version", BigInteger, nullable=False, unique=True),
    Column("receipt", Text, nullable=False),
    Column("signature", String(200), nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("project_id", "request_id", name="uq_completion_request"),
)

observations = Table(
    "observations",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("target", String(1100), nullable=False),
    Column("revision", BigInteger, nullable=True),
    Column("digest", String(80), nullable=True),
    Column("kind", String(50), nullable=False),
    Column("observed_at", Float, nullable=False),
    Column("observer_id", String(ID), nullable=False),
    Index("ix_observations_target", "project_id", "target"),
)

handoffs = Table(
    "handoffs",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("task_id", String(ID), ForeignKey("tasks.id"), nullable=False),
    Column("attempt_id", String(ID), nullable=False),
    Column("principal_id", String(ID), nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_handoffs_task", "task_id"),
)

events = Table(
    "events",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("project_id", String(ID), nullable=True),
    Column("kind", String(64), nullable=False),
    Column("actor", String(ID), nullable=True),
    Column("subject", String(200), nullable=True),
    Column("data", Text, nullable=False),
    Column("at", Float, nullable=False),
    Column("prev_hash", String(80), nullable=False),
    Column("hash", String(80), nullable=False),
    Index("ix_events_project", "project_id", "seq"),
    Index("ix_events_subject", "subject", "seq"),
)

# The head of each audit chain (one per project, "" for events of no project): the last
# event's seq and hash, and its time (the chain's clock guard). Updated with every append.
chains = Table(
    "chains",
    metadata,
    Column("chain", String(ID), primary_key=True),
    Column("seq", BigInteger, nullable=False),
    Column("hash", String(80), nullable=False),
    Column("at", Float, nullable=False),
)

# The A2A face (docs/a2a.md): intake templates an admin defines, and delegated tasks.
a2a_intakes = Table(
    "a2a_intakes",
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("name", String(100), primary_key=True),
    Column("description", Text, nullable=False),
    Column("contract", Text, nullable=False),  # JSON: criteria, scope, policy_version
    Column("created_at", Float, nullable=False),
)

a2a_tasks = Table(
    "a2a_tasks",
    metadata,
    Column("id", String(100), primary_key=True),  # the A2A task id
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("requester_id", String(ID), ForeignKey("principals.id"), nullable=False),
    Column("context_id", String(100), nullable=False),
    Column("intake", String(100), nullable=False),
    Column("task_id", String(ID), ForeignKey("tasks.id"), nullable=True),  # None: refused
    Column("refused", Text, nullable=True),
    Column("message", Text, nullable=False),  # the requester's message, A2A JSON
    Column("created_at", Float, nullable=False),
    Index("ix_a2a_tasks_requester", "requester_id", "created_at"),
    Index("ix_a2a_tasks_task", "task_id"),
)

# The A2A requester side (docs/a2a.md, "Delegating to a remote agent"): a trust anchor per
# remote organisation and project (pinned keys), and each delegation's durable state.
a2a_remote_orgs = Table(
    "a2a_remote_orgs",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("keys", Text, nullable=False),  # JSON: kid → Ed25519 public key (base64url)
    Column("agent_id", String(ID), ForeignKey("principals.id"), nullable=False),
    Column("verifier_id", String(ID), ForeignKey("principals.id"), nullable=False),
    Column("checker", String(200), nullable=False),
    Column("target", String(1000), nullable=False),
    Column("attest_key", Text, nullable=False),  # the verifier principal's private key
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
    Column("origins", Text, nullable=False, server_default="[]"),  # JSON: where requests may go
    UniqueConstraint("project_id", "name", name="uq_a2a_remote_org_name"),
)

a2a_remote_delegations = Table(
    "a2a_remote_delegations",
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("task_id", String(ID), ForeignKey("tasks.id"), nullable=False),
    Column("org_id", String(ID), ForeignKey("a2a_remote_orgs.id"), nullable=False),
    Column("agent_url", String(2000), nullable=False),
    Column("card_digest", String(80), nullable=False),
    Column("pinned", Text, nullable=False),  # JSON: the keys pinned at delegation
    Column("attempt_id", String(ID), ForeignKey("attempts.id"), nullable=False),
    Column("fence", Integer, nullable=False),
    Column("state", String(40), nullable=False),
    Column("remote_task_id", String(200), nullable=True),
    Column("remote_state", String(40), nullable=True),
    Column("since", Float, nullable=True),
    Column("reason", Text, nullable=True),
    Column("evidence", Text, nullable=False),  # JSON
    Column("completion_id", String(ID), nullable=True),
    Column("created_by", String(ID), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Index("ix_a2a_remote_delegations_state", "state", "updated_at"),
    Index("ix_a2a_remote_delegations_task", "task_id"),
)

# The publication log: one row per change to a project's artifacts (an accepted completion,
# a direct edit or delete, an import), written in the change's own transaction. Projections
# (the git repository, docs/git.md) replay it; the ledger never waits for them.
publications = Table(
    "publications",
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("version", BigInteger, primary_key=True),  # the seq of the change's audit event
    Column("kind", String(16), nullable=False),  # "completion", "edit" or "import"
    Column("actor", String(ID), nullable=True),
    Column("at", Float, nullable=False),
    Column("changes", Text, nullable=False),  # JSON: path → [digest, mode] (mode null: kept), or null
    Column("meta", Text, nullable=False),  # JSON: title, task, attempt, candidate, contract, ...
)

# Evidence retention and deletion (docs/operations.md, "Retention and deletion").
retention_policies = Table(
    "retention_policies",  # seconds each kind is kept (NULL: for ever); no row: all for ever
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("candidates", Float, nullable=True),
    Column("verifier_logs", Float, nullable=True),
    Column("delegations", Float, nullable=True),
    Column("updated_at", Float, nullable=False),
    Column("updated_by", String(ID), nullable=True),
    Column("audit_detail", Float, nullable=True),  # migration 0016
)

legal_holds = Table(
    "legal_holds",  # on a task, or on the whole project (task_id NULL); live until released
    metadata,
    Column("id", String(ID), primary_key=True),
    Column("project_id", String(ID), ForeignKey("projects.id"), nullable=False),
    Column("task_id", String(ID), nullable=True),
    Column("reason", Text, nullable=False),
    Column("placed_by", String(ID), nullable=False),
    Column("placed_at", Float, nullable=False),
    Column("released_at", Float, nullable=True),
    Column("released_by", String(ID), nullable=True),
    Column("release_reason", Text, nullable=True),
    Index("ix_legal_holds_project", "project_id", "released_at"),
)

tombstones = Table(
    "tombstones",  # bytes deleted (by a sweep or on request): what, of what, by whom, when, why
    metadata,
    Column("project_id", String(ID), ForeignKey("projects.id"), primary_key=True),
    Column("digest", String(80), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("paths", Text, nullable=False),  # JSON list: the project's paths that named the bytes
    Column("subject", String(1100), nullable=False),
    Column("reason", Text, nullable=False),
    Column("deleted_by", String(ID), nullable=False),  # a principal id, or "retention"
    Column("deleted_at", Float, nullable=False),
    Index("ix_tombstones_digest", "digest"),  # a restore drops every tombstoned blob
)

retention_swept = Table(
    "retention_swept",  # evidence a sweep already deleted: (kind, candidate/receipt/delegation id)
    metadata,
    Column("kind", String(32), primary_key=True),
    Column("subject", String(100), primary_key=True),
    Column("project_id", String(ID), nullable=False),
    Column("swept_at", Float, nullable=False),
)
