"""The A2A requester (docs/a2a.md, "Delegating to a remote agent"): drives every delegation
the ledger holds — send, poll, and on any remote terminal state the two-phase quiescence check
(`studiolo.core.quiescence.verify_and_quiesce`) — and reports each step through the door.

It polls `GetTask` (a finished task cannot be re-subscribed to); it never finalizes on a
terminal state alone. It keeps no state of its own: started with the service, it resumes
every wait the ledger holds, with the bound counted from when the wait began.

One thread runs an asyncio loop with the a2a-sdk clients; each quiescence check runs in a
worker thread whose reads and URL fetches go back to that loop. Every request goes through
`remote_client`: only to the organisation's origins (no non-public address they do not name),
bodies capped, a total deadline per exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import jwt
from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import A2ACardResolver, parse_agent_card
from a2a.client.client import Client as A2AClient
from a2a.client.errors import A2AClientTimeoutError
from a2a.types.a2a_pb2 import AgentCard, GetTaskRequest, Message, Part, Role, SendMessageRequest, Task
from a2a.types.a2a_pb2 import TaskState as WireState
from a2a.utils.signing import create_signature_verifier
from starlette.concurrency import run_in_threadpool

from studiolo._exceptions import InvalidRequest
from studiolo.core.canonical import digest_bytes
from studiolo.core.model import Principal
from studiolo.core.quiescence import (
    ArtifactIntegrityError,
    Channel,
    Outcome,
    OutcomeKind,
    QuiescencePolicy,
    RemoteTaskView,
    SignedArtifact,
    TaskState,
    verify_and_quiesce,
)
from studiolo.core.reasons import ErrorReason
from studiolo.core.remote import (
    MANIFEST_EXTENSION,
    RemoteDelegation,
    RemoteFile,
    RemoteOrg,
    RemoteResult,
    RemoteState,
    origin_of,
)
from studiolo.jws import card_payload
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.workers.a2a.capped import remote_client
from studiolo.workers.a2a.hints import Hints
from studiolo.workers.a2a.origins import OriginRefused
from studiolo.workers.a2a.remote_view import manifest_kid, read_task
from studiolo.workers.lifetime import for_app_lifetime

__all__ = [
    "CardCheck",
    "Requester",
    "check_origin",
    "delegate",
    "fetch_verified_card",
    "mount_requester",
    "policy_from",
]

log = logging.getLogger("studiolo.a2a.requester")
T = TypeVar("T")
_MAX_CARD_BYTES = 1024 * 1024
_CARD_PATH = "/.well-known/agent-card.json"


class _Stopped(Exception):
    """The service is stopping: leave the wait to the next start (the ledger holds it)."""


def policy_from(settings: Settings) -> QuiescencePolicy:
    return QuiescencePolicy(
        bound=settings.a2a_quiescence_bound,
        initial_delay=settings.a2a_backoff_initial,
        max_delay=settings.a2a_backoff_max,
        confirm_interval=settings.a2a_confirm_seconds,
        max_artifact_size=settings.a2a_max_artifact_bytes,
        max_rounds=100_000,
    )


# The card, verified with pinned keys only -----------------------------------------------
@dataclass(frozen=True)
class CardCheck:
    card: AgentCard
    digest: str  # sha256 of the signed payload (RFC 8785 of the card without signatures)
    kid: str  # the pinned key whose signature verified


async def fetch_verified_card(agent_url: str, org: RemoteOrg, *, deadline: float) -> CardCheck:
    """Fetch the remote Agent Card — only from one of the organisation's origins, within
    `deadline` seconds in all — and verify its signature with the SDK's verifier, given only the
    pinned keys (no `jku`, no trust on first use); its interfaces must be on those origins too.
    Raises InvalidRequest otherwise."""
    url = agent_url.rstrip("/") + _CARD_PATH
    check_origin(agent_url, org)
    try:
        async with remote_client(org.origins, _MAX_CARD_BYTES, deadline) as http:
            r = await http.get(url)
        card = parse_agent_card(r.json()) if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        raise InvalidRequest(f"cannot read the agent card at {url}: {exc}") from exc
    if card is None:
        raise InvalidRequest(f"no agent card at {url}")
    for interface in card.supported_interfaces:
        check_origin(interface.url, org)
    for kid in sorted(org.keys):
        if _card_verifies(card, kid, org.keys[kid]):
            return CardCheck(card, digest_bytes(card_payload(card)), kid)
    raise InvalidRequest("the agent card is not signed by a pinned key", reason=ErrorReason.SIGNATURE_INVALID)


def check_origin(url: str, org: RemoteOrg) -> None:
    """Refuse (before any I/O) a URL that is not on one of the organisation's origins."""
    if not org.origins:
        raise InvalidRequest(
            f"remote organisation {org.name!r} names no origins: `studiolo remote-org origins {org.name} "
            "--origin https://…` first"
        )
    if origin_of(url) not in org.origins:
        raise InvalidRequest(f"{str(url)[:200]} is not on an origin of {org.name!r}")


def _card_verifies(card: AgentCard, kid: str, public: str) -> bool:
    jwk = jwt.PyJWK({"kty": "OKP", "crv": "Ed25519", "x": public, "kid": kid, "alg": "EdDSA"})

    def key_for(wanted: str | None, _jku: str | None) -> jwt.PyJWK:
        if wanted != kid:
            raise jwt.exceptions.PyJWKError("not the pinned key")
        return jwk

    try:
        create_signature_verifier(key_for, ["EdDSA"])(card)
    except Exception:  # the SDK's SignatureVerificationError family, or a malformed card
        return False
    return True


def mount_requester(app: Any, door: Coordinator, settings: Settings) -> Requester:
    """Run a requester for the app's lifetime (`app.state.requester`): it starts with the
    service and resumes every wait the ledger holds."""
    requester = Requester(door, settings)
    app.state.requester = requester
    for_app_lifetime(app, requester)
    return requester


async def delegate(
    door: Coordinator,
    caller: Principal,
    task_id: str,
    org_name: str,
    agent_url: str,
    *,
    skill: str | None = None,
    settings: Settings,
) -> RemoteDelegation:
    """Delegate a task: the caller's right first, then the remote card fetched (on the event
    loop, under a total deadline: no thread waits on a remote) and verified with the
    organisation's pinned keys, then the delegation recorded (the worker sends it)."""
    org = await run_in_threadpool(door.remote_org_for_task, caller, task_id, org_name)
    card = await fetch_verified_card(agent_url, org, deadline=settings.a2a_request_timeout)
    return await run_in_threadpool(
        door.delegate_remote,
        caller,
        task_id,
        org_name,
        agent_url=agent_url,
        card_digest=card.digest,
        card_kid=card.kid,
        skill=skill,
    )


# The worker ---------------------------------------------------------------------------
@dataclass
class _Latest:
    inline: Mapping[str, bytes] = field(default_factory=dict)
    kid: str | None = None


class Requester:
    """Drive every waiting delegation; `start()` with the service, `stop()` with it."""

    def __init__(self, door: Coordinator, settings: Settings) -> None:
        self.door = door
        self.settings = settings
        self.policy = policy_from(settings)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.lease_seconds = max(2.0, 10 * settings.a2a_poll_seconds)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping: asyncio.Event | None = None
        self._running: dict[str, asyncio.Task[None]] = {}

    # lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="studiolo-a2a-requester", daemon=True
        )
        self._thread.start()
        ready.wait(5)

    def stop(self) -> None:
        self._stop.set()
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)
        self.kick()
        if self._thread is not None:
            self._thread.join(timeout=15)

    def kick(self) -> None:
        """Look at the ledger now (a new delegation, or a hint from the remote)."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            loop.call_soon_threadsafe(wake.set)

    def _run(self, ready: threading.Event) -> None:
        async def main() -> None:
            self._loop, self._wake, self._stopping = (
                asyncio.get_running_loop(),
                asyncio.Event(),
                asyncio.Event(),
            )
            ready.set()
            await self._supervise()

        asyncio.run(main())

    async def _supervise(self) -> None:
        """Hold the ledger's requester lease and drive every pending delegation; without the
        lease (another process holds it), drive nothing."""
        assert self._wake is not None
        while not self._stop.is_set():
            try:
                if await asyncio.to_thread(self.door.requester_lease, self.owner, self.lease_seconds):
                    self._spawn(await asyncio.to_thread(self.door.pending_remote))
                else:
                    await self._cancel_all()
            except Exception:
                log.exception("the requester could not read the ledger")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.settings.a2a_poll_seconds)
        await self._cancel_all()
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.door.requester_release, self.owner)

    def _spawn(self, pending: list[tuple[RemoteDelegation, RemoteOrg]]) -> None:
        for d, org in pending:
            if d.id not in self._running:
                self._running[d.id] = asyncio.create_task(self._guarded(d, org))

    async def _cancel_all(self) -> None:
        running = list(self._running.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    async def _guarded(self, d: RemoteDelegation, org: RemoteOrg) -> None:
        try:
            await self._drive(d, org)
        except (_Stopped, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("delegation %s: the requester failed; it will resume", d.id)
            await asyncio.sleep(self.settings.a2a_poll_seconds)
        finally:
            self._running.pop(d.id, None)

    # one delegation ---------------------------------------------------------------------
    async def _drive(self, d: RemoteDelegation, org: RemoteOrg) -> None:
        try:
            check_origin(d.agent_url, org)
        except InvalidRequest as exc:  # e.g. an organisation pinned before origins existed
            log.warning("delegation %s waits: %s", d.id, exc.detail)
            await self._pause()
            return
        headers = {"A2A-Extensions": MANIFEST_EXTENSION}
        token = self.settings.a2a_credentials.get(org.name)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        cap, deadline = self.settings.a2a_max_response_bytes, self.settings.a2a_request_timeout
        async with remote_client(org.origins, cap, deadline, headers=headers) as http:
            resolver = A2ACardResolver(http, d.agent_url)
            card = await resolver.get_agent_card(signature_verifier=_pinned_verifier(d.pinned))
            client = await create_client(card, ClientConfig(streaming=False, polling=True, httpx_client=http))
            streams = card.capabilities.streaming
            hinting = (
                await create_client(card, ClientConfig(streaming=True, httpx_client=http))
                if streams
                else None
            )
            hints = Hints(hinting)
            try:
                while not self._stop.is_set():
                    d = await asyncio.to_thread(self.door.remote_state, d.id)
                    if not d.state.waiting:
                        return
                    await self._step(client, hints, d, http)
            finally:
                await hints.close()
                await client.close()

    async def _step(
        self, client: A2AClient, hints: Hints, d: RemoteDelegation, http: httpx.AsyncClient
    ) -> None:
        if d.state is RemoteState.DELEGATED:
            await self._send(client, d)
        elif d.state is RemoteState.REMOTE_WORKING:
            await self._poll(client, hints, d)
        else:
            await asyncio.to_thread(self._quiesce, client, d, http)

    async def _send(self, client: A2AClient, d: RemoteDelegation) -> None:
        title, text = await asyncio.to_thread(self.door.remote_brief, d.id)
        msg = Message(role=Role.ROLE_USER, message_id=d.id, parts=[Part(text=text or title)])
        msg.metadata.update(
            {"title": title, **({"skill": d.evidence["skill"]} if d.evidence.get("skill") else {})}
        )
        try:
            task = await _first_task(client, SendMessageRequest(message=msg))
        except Exception as exc:
            if _transient(exc):
                await self._pause()  # unreachable for now: the next step sends again
                return
            why = f"the remote refused the message: {type(exc).__name__}: {exc}"
            await asyncio.to_thread(self.door.remote_send_failed, d.id, why)
            return
        if task is None:
            await asyncio.to_thread(self.door.remote_send_failed, d.id, "the remote answered without a task")
            return
        state = TaskState.from_wire(_wire_name(task.status.state))
        await asyncio.to_thread(self.door.remote_sent, d.id, task.id, state.value)

    async def _poll(self, client: A2AClient, hints: Hints, d: RemoteDelegation) -> None:
        """One `GetTask`: a terminal state starts the wait for quiescence; else wait for the
        next poll, or for a stream hint (which only makes the next read come sooner)."""
        assert d.remote_task_id is not None
        hints.follow(d.remote_task_id)
        await asyncio.to_thread(self.door.remote_keepalive, d.id)
        try:
            task = await client.get_task(GetTaskRequest(id=d.remote_task_id))
        except Exception as exc:
            log.info("delegation %s: GetTask failed (%s); polling again", d.id, exc)
            await self._pause(hints)
            return
        state = TaskState.from_wire(_wire_name(task.status.state))
        if state.terminal:
            await asyncio.to_thread(self.door.remote_terminal, d.id, state)
            return
        await self._pause(hints)

    async def _pause(self, hints: Hints | None = None) -> None:
        assert self._stopping is not None
        if hints is not None:
            await hints.wait(self.settings.a2a_poll_seconds, self._stopping)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.settings.a2a_poll_seconds)
        if self._stop.is_set():
            raise _Stopped

    # the two-phase check (runs in a worker thread) ----------------------------------------
    def _quiesce(self, client: A2AClient, d: RemoteDelegation, http: httpx.AsyncClient) -> None:
        assert d.remote_task_id is not None and self._loop is not None
        latest = _Latest()
        remote_id, loop = d.remote_task_id, self._loop

        def read_view() -> RemoteTaskView:
            self.door.remote_keepalive(d.id)
            try:
                task = _on(
                    loop, client.get_task(GetTaskRequest(id=remote_id)), self.settings.a2a_request_timeout
                )
            except (_Stopped, ArtifactIntegrityError):
                raise
            except Exception as exc:  # unreachable now: not a terminal read, so not final
                log.info("delegation %s: GetTask failed (%s)", d.id, exc)
                return RemoteTaskView(remote_id, TaskState.UNKNOWN)
            read = read_task(task)
            latest.inline = read.inline
            return read.view

        def verify(view: RemoteTaskView) -> bool:
            latest.kid = manifest_kid(view, d.pinned)
            return latest.kid is not None

        fetch = _fetcher(http, loop, latest, self._stop, self.settings.a2a_request_timeout)
        try:
            out = verify_and_quiesce(
                read_view, fetch, verify, self.door.clock, self._sleep, self.policy, since=d.since
            )
        except ArtifactIntegrityError as err:
            self.door.remote_integrity_failed(d.id, _integrity_evidence(err), _integrity_blobs(err))
            return
        self._report(d, out, latest)

    def _sleep(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise _Stopped

    def _report(self, d: RemoteDelegation, out: Outcome, latest: _Latest) -> None:
        view = out.view
        assert view is not None
        got = out.payloads if out.kind is OutcomeKind.QUIESCED else out.verified
        files = tuple(
            RemoteFile(a.artifact_id, a.name, got[a.artifact_id])
            for a in view.artifacts
            if a.artifact_id in got
        )
        result = RemoteResult(view.state, view.signed_manifest, files, out.missing, latest.kid)
        if out.kind is OutcomeKind.QUIESCED:
            self.door.remote_finish(d.id, result)
        else:
            self.door.remote_indeterminate(d.id, out.reason, result)


async def _first_task(client: A2AClient, request: SendMessageRequest) -> Task | None:
    async for event in client.send_message(request):
        if event.HasField("task"):
            return event.task
    return None


def _transient(exc: BaseException) -> bool:
    """A network failure, a timeout, or an overloaded remote (5xx, 429): worth sending again.
    Anything else (an A2A error, a 4xx) is the remote refusing the message, and a request off the
    organisation's origins is never tried again."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OriginRefused):
            return False
        if isinstance(
            seen, httpx.TransportError | httpx.TimeoutException | TimeoutError | A2AClientTimeoutError
        ):
            return True
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code >= 500 or seen.response.status_code == 429
        seen = seen.__cause__
    return False


def _fetcher(
    http: httpx.AsyncClient,
    loop: asyncio.AbstractEventLoop,
    latest: _Latest,
    stop: threading.Event,
    deadline: float,
) -> Callable[[SignedArtifact], bytes | None]:
    """Artifact bytes: inline ones from the last read; URL and detached ones fetched on the
    requester's loop through its client (the organisation's origins only, a total deadline),
    at most the signed size + 1 bytes."""

    def fetch(a: SignedArtifact) -> bytes | None:
        if stop.is_set():
            raise _Stopped
        if a.channel is Channel.INLINE:
            return latest.inline.get(a.artifact_id)
        if a.location is None or origin_of(a.location) is None:
            raise ArtifactIntegrityError(
                "untrusted_location", f"{a.artifact_id!r} has no http(s) URL", artifact=a
            )
        try:
            return _on(loop, _download(http, a.location, a.size + 1), deadline + 5)
        except OriginRefused as exc:
            raise ArtifactIntegrityError(
                "untrusted_location", f"{a.artifact_id!r}: {exc}", artifact=a
            ) from exc
        except (httpx.HTTPError, TimeoutError):
            return None  # not there yet: the check retries

    return fetch


async def _download(http: httpx.AsyncClient, url: str, cap: int) -> bytes | None:
    out = bytearray()
    async with http.stream("GET", url) as r:
        if r.status_code != 200:
            return None
        async for chunk in r.aiter_bytes():
            out += chunk
            if len(out) >= cap:
                break
    return bytes(out)


def _integrity_evidence(err: ArtifactIntegrityError) -> dict[str, Any]:
    a = err.artifact
    return {
        "code": err.code,
        "detail": err.detail[:2000],
        "artifact": a.artifact_id if a else None,
        "signed_sha256": a.sha256 if a else None,
        "signed_size": a.size if a else None,
        "actual_sha256": err.actual_sha256,
        "actual_size": err.actual_size,
        "actual": ("sha256:" + err.actual_sha256) if err.actual_sha256 else None,  # kept as a blob
        "manifest": ("sha256:" + err.view.manifest_digest) if err.view and err.view.manifest_digest else None,
        "remote_state": err.view.state.value if err.view else None,
    }


def _integrity_blobs(err: ArtifactIntegrityError) -> list[bytes]:
    """Kept: the signed manifest as received (the remote's own statement) and the bytes that
    did not match it (already capped at the signed size + 1)."""
    kept = [err.view.signed_manifest] if err.view is not None and err.view.signed_manifest else []
    return kept + ([err.data] if err.data else [])


def _pinned_verifier(pinned: Mapping[str, str]) -> Callable[[AgentCard], None]:
    jwks = {
        kid: jwt.PyJWK({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA"})
        for kid, x in pinned.items()
    }

    def key_for(kid: str | None, _jku: str | None) -> jwt.PyJWK:
        if kid not in jwks:
            raise jwt.exceptions.PyJWKError("not a pinned key")
        return jwks[kid]

    return create_signature_verifier(key_for, ["EdDSA"])


def _on(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], timeout: float) -> T:
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)


def _wire_name(state: int) -> str:
    return str(WireState.Name(state))
