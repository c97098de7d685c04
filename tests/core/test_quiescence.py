"""The two-phase quiescence check on a virtual clock: a scripted remote whose terminal state,
manifest and artifacts each become visible at their own time (or never)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studiolo.core.quiescence import (
    ArtifactIntegrityError,
    Channel,
    Outcome,
    OutcomeKind,
    QuiescencePolicy,
    Readiness,
    RemoteTaskView,
    SignedArtifact,
    TaskState,
    agree,
    assess,
    backoff_delay,
    check_artifact,
    verify_and_quiesce,
)

NEVER = 10**9
POLICY = QuiescencePolicy(bound=100.0, max_rounds=10_000, initial_delay=1.0, factor=2.0, max_delay=8.0)


def _artifact(i: int, data: bytes, channel: Channel = Channel.DETACHED) -> SignedArtifact:
    loc = None if channel is Channel.INLINE else f"https://remote.example/a/{i}"
    return SignedArtifact(f"a{i}", f"file{i}", hashlib.sha256(data).hexdigest(), len(data), channel, loc)


@dataclass
class Remote:
    """Visible at virtual time t: WORKING before `terminal_at`, the manifest from
    `manifest_at`, artifact i from `arrivals[i]`; `tampered` artifacts serve other bytes."""

    terminal_at: int
    manifest_at: int
    arrivals: list[int]
    state: TaskState = TaskState.COMPLETED
    tampered: frozenset[int] = frozenset()
    now: float = 0.0
    reads: int = 0
    fetched: list[tuple[float, str]] = field(default_factory=list)

    @property
    def payloads(self) -> list[bytes]:
        return [f"artifact {i} ".encode() * (i + 1) for i in range(len(self.arrivals))]

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds

    def read_view(self) -> RemoteTaskView:
        self.reads += 1
        if self.now < self.terminal_at:
            return RemoteTaskView("t1", TaskState.WORKING)
        if self.now < self.manifest_at:
            return RemoteTaskView("t1", self.state)
        arts = tuple(_artifact(i, d) for i, d in enumerate(self.payloads))
        signed = repr(arts).encode()
        return RemoteTaskView("t1", self.state, arts, hashlib.sha256(signed).hexdigest(), "t1", signed)

    def fetch(self, a: SignedArtifact) -> bytes | None:
        i = int(a.artifact_id[1:])
        self.fetched.append((self.now, a.artifact_id))
        if self.now < self.arrivals[i]:
            return None
        return b"evil" + self.payloads[i][4:] if i in self.tampered else self.payloads[i]

    def run(self, policy: QuiescencePolicy = POLICY, *, signed_ok: bool = True) -> Outcome:
        return verify_and_quiesce(
            self.read_view, self.fetch, lambda v: signed_ok, self.clock, self.sleep, policy
        )


times = st.one_of(st.integers(0, 150), st.just(NEVER))


@settings(max_examples=300, deadline=None)
@given(terminal=st.integers(0, 150), manifest=times, arrivals=st.lists(times, max_size=5))
def test_quiesced_exactly_when_everything_is_there_by_the_bound(
    terminal: int, manifest: int, arrivals: list[int]
) -> None:
    remote = Remote(terminal, manifest, arrivals)
    out = remote.run()
    ready_at = max([terminal, manifest, *arrivals])
    assert out.elapsed <= POLICY.bound + POLICY.confirm_interval  # the confirming read may follow it
    if ready_at <= POLICY.bound:
        assert out.kind is OutcomeKind.QUIESCED
        # Never before the last artifact was there; every payload is the signed bytes.
        assert remote.now >= ready_at
        assert out.payloads == {f"a{i}": d for i, d in enumerate(remote.payloads)}
        assert out.view is not None and out.view.state is TaskState.COMPLETED
    else:
        assert out.kind is OutcomeKind.INDETERMINATE
        assert out.payloads == {}
        assert remote.now == POLICY.bound


@settings(max_examples=200, deadline=None)
@given(
    terminal=st.integers(0, 50),
    arrivals=st.lists(st.integers(0, 90), min_size=1, max_size=4),
    data=st.data(),
)
def test_a_tampered_artifact_is_never_quiesced(
    terminal: int, arrivals: list[int], data: st.DataObject
) -> None:
    bad = data.draw(st.integers(0, len(arrivals) - 1))
    remote = Remote(terminal, terminal, arrivals, tampered=frozenset({bad}))
    with pytest.raises(ArtifactIntegrityError) as err:
        remote.run()
    assert err.value.code == "size_mismatch" or err.value.code == "hash_mismatch"
    assert err.value.artifact is not None and err.value.artifact.artifact_id == f"a{bad}"
    assert err.value.actual_sha256 is not None and err.value.data is not None
    assert hashlib.sha256(err.value.data).hexdigest() == err.value.actual_sha256


@settings(max_examples=100, deadline=None)
@given(terminal=st.integers(0, 99), state=st.sampled_from([TaskState.FAILED, TaskState.CANCELED]))
def test_failed_or_canceled_with_artifacts_in_flight_still_waits(terminal: int, state: TaskState) -> None:
    remote = Remote(terminal, terminal, [terminal + 30], state=state)
    out = remote.run()
    if terminal + 30 <= POLICY.bound:
        assert out.kind is OutcomeKind.QUIESCED and out.view is not None and out.view.state is state
        assert remote.now >= terminal + 30
    else:
        assert out.kind is OutcomeKind.INDETERMINATE


@pytest.mark.parametrize("state", [TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED])
def test_every_terminal_state_waits_for_its_manifest_by_default(state: TaskState) -> None:
    """The cost of the rule: a remote that ends without ever signing a manifest is
    indeterminate at the bound (an operator decides), not trusted."""
    remote = Remote(0, NEVER, [], state=state)
    out = remote.run()
    assert out.kind is OutcomeKind.INDETERMINATE and out.reason == "no_manifest"
    assert remote.now == POLICY.bound


@pytest.mark.parametrize("state", [TaskState.FAILED, TaskState.CANCELED])
def test_a_manifest_lagging_a_failed_or_canceled_state_is_waited_for(state: TaskState) -> None:
    remote = Remote(0, 30, [0, 35], state=state)
    out = remote.run()
    assert out.kind is OutcomeKind.QUIESCED and out.view is not None and out.view.state is state
    assert remote.now >= 35 and out.payloads == {f"a{i}": d for i, d in enumerate(remote.payloads)}


def test_a_policy_may_trust_a_failed_state_without_a_manifest() -> None:
    policy = replace(POLICY, manifest_required=frozenset({TaskState.COMPLETED}))
    out = Remote(0, NEVER, [], state=TaskState.FAILED).run(policy)
    assert out.kind is OutcomeKind.QUIESCED and out.payloads == {}


def test_completed_without_a_manifest_waits_for_it() -> None:
    out = Remote(0, NEVER, []).run()
    assert out.kind is OutcomeKind.INDETERMINATE and out.reason == "no_manifest"


def test_an_unpinned_signature_is_an_integrity_error_before_any_fetch() -> None:
    remote = Remote(0, 0, [0, 0])
    with pytest.raises(ArtifactIntegrityError) as err:
        remote.run(signed_ok=False)
    assert err.value.code == "bad_signature" and remote.fetched == []


def test_the_second_read_must_agree() -> None:
    """A manifest re-signed between the two reads: the first agreeing pair is the newer one."""
    old = _artifact(0, b"old")
    new = _artifact(0, b"new")
    views = iter(
        [
            RemoteTaskView("t", TaskState.COMPLETED, (old,), "d1", "t"),
            RemoteTaskView("t", TaskState.COMPLETED, (new,), "d2", "t"),
        ]
        + [RemoteTaskView("t", TaskState.COMPLETED, (new,), "d2", "t")] * 3
    )
    data = {old.sha256: b"old", new.sha256: b"new"}
    now = [0.0]
    out = verify_and_quiesce(
        lambda: next(views), lambda a: data[a.sha256], lambda v: True, lambda: now[0], _adder(now), POLICY
    )
    assert (
        out.kind is OutcomeKind.QUIESCED
        and out.view is not None
        and out.view.manifest_digest == "d2"
        and out.payloads == {"a0": b"new"}
    )
    assert out.rounds == 2


def _adder(now: list[float]) -> Callable[[float], None]:
    def sleep(s: float) -> None:
        now[0] += s

    return sleep


def test_a_resumed_wait_keeps_its_bound() -> None:
    remote = Remote(0, 0, [NEVER], now=500.0)
    out = verify_and_quiesce(
        remote.read_view, remote.fetch, lambda v: True, remote.clock, remote.sleep, POLICY, since=450.0
    )
    assert out.kind is OutcomeKind.INDETERMINATE and remote.now == 550.0 and out.missing == ("a0",)
    assert out.verified == {} and out.payloads == {}


def test_indeterminate_keeps_what_did_verify() -> None:
    remote = Remote(0, 0, [0, NEVER])
    out = remote.run()
    assert out.kind is OutcomeKind.INDETERMINATE and out.missing == ("a1",)
    assert out.verified == {"a0": remote.payloads[0]} and out.payloads == {}


def test_max_rounds_bounds_the_retries() -> None:
    remote = Remote(0, 0, [NEVER])
    out = remote.run(QuiescencePolicy(bound=1e9, max_rounds=3, initial_delay=1.0))
    assert out.kind is OutcomeKind.INDETERMINATE and out.rounds == 3
    assert len(remote.fetched) == 3 and remote.now == 3.0


def test_verified_artifacts_are_not_fetched_again() -> None:
    remote = Remote(0, 0, [0, 40])
    remote.run()
    assert [a for _, a in remote.fetched].count("a0") == 1


def test_manifest_bound_to_another_task() -> None:
    view = RemoteTaskView("t1", TaskState.COMPLETED, (), "d", "t2")
    with pytest.raises(ArtifactIntegrityError, match="wrong_task"):
        assess(view, POLICY)


def test_manifest_listing_an_artifact_twice_or_oversize() -> None:
    a = _artifact(0, b"x")
    with pytest.raises(ArtifactIntegrityError, match="invalid_manifest"):
        assess(RemoteTaskView("t", TaskState.COMPLETED, (a, a), "d", "t"), POLICY)
    big = SignedArtifact("b", "b", "0" * 64, POLICY.max_artifact_size + 1, Channel.URL, "https://x/b")
    with pytest.raises(ArtifactIntegrityError, match="oversize"):
        assess(RemoteTaskView("t", TaskState.COMPLETED, (big,), "d", "t"), POLICY)
    many = tuple(_artifact(i, b"x") for i in range(3))
    with pytest.raises(ArtifactIntegrityError, match="oversize"):
        assess(RemoteTaskView("t", TaskState.COMPLETED, many, "d", "t"), QuiescencePolicy(max_artifacts=2))


def test_readiness_of_reads() -> None:
    a = _artifact(0, b"x")
    assert assess(RemoteTaskView("t", TaskState.WORKING, (a,), "d", "t"), POLICY) is Readiness.NOT_TERMINAL
    assert assess(RemoteTaskView("t", TaskState.COMPLETED), POLICY) is Readiness.NO_MANIFEST
    assert assess(RemoteTaskView("t", TaskState.REJECTED), POLICY) is Readiness.NO_MANIFEST
    completed_only = replace(POLICY, manifest_required=frozenset({TaskState.COMPLETED}))
    assert assess(RemoteTaskView("t", TaskState.REJECTED), completed_only) is Readiness.READY
    unsigned = RemoteTaskView("t", TaskState.COMPLETED, (a,), "d", "t", unsigned=("extra",))
    assert assess(unsigned, POLICY) is Readiness.UNSIGNED_ARTIFACTS


def test_an_unsigned_artifact_on_the_task_keeps_the_wait_open() -> None:
    a = _artifact(0, b"x")
    view = RemoteTaskView("t", TaskState.COMPLETED, (a,), "d", "t", unsigned=("extra",))
    now = [0.0]
    out = verify_and_quiesce(
        lambda: view, lambda _: b"x", lambda v: True, lambda: now[0], _adder(now), POLICY
    )
    assert out.kind is OutcomeKind.INDETERMINATE and out.reason == "unsigned_artifacts"


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_check_artifact(signed: bytes, got: bytes) -> None:
    a = _artifact(0, signed)
    if got == signed:
        check_artifact(a, got)
    else:
        with pytest.raises(ArtifactIntegrityError):
            check_artifact(a, got)


def test_agree_needs_same_terminal_state_and_manifest() -> None:
    base = RemoteTaskView("t", TaskState.COMPLETED, (), "d", "t")
    assert agree(base, base)
    assert not agree(base, RemoteTaskView("t", TaskState.FAILED, (), "d", "t"))
    assert not agree(base, RemoteTaskView("t", TaskState.COMPLETED, (), "e", "t"))
    assert not agree(RemoteTaskView("t", TaskState.WORKING), RemoteTaskView("t", TaskState.WORKING))
    assert not agree(base, RemoteTaskView("u", TaskState.COMPLETED, (), "d", "t"))


def test_states_from_the_wire() -> None:
    assert TaskState.from_wire("TASK_STATE_COMPLETED") is TaskState.COMPLETED
    assert TaskState.from_wire("TASK_STATE_INPUT_REQUIRED") is TaskState.INPUT_REQUIRED
    assert TaskState.from_wire("canceled") is TaskState.CANCELED
    assert TaskState.from_wire("bogus") is TaskState.UNKNOWN
    assert {s for s in TaskState if s.terminal} == {
        TaskState.COMPLETED,
        TaskState.FAILED,
        TaskState.CANCELED,
        TaskState.REJECTED,
    }


@given(st.integers(0, 200))
def test_backoff_is_monotone_and_capped(n: int) -> None:
    assert backoff_delay(POLICY, n) <= POLICY.max_delay
    assert backoff_delay(POLICY, n) <= backoff_delay(POLICY, n + 1)


@dataclass
class Growing:
    """One declared artifact whose bytes arrive `step` bytes per virtual second (a chunked
    inline artifact, or a file served before it is complete), ending as `final`."""

    signed: bytes
    final: bytes
    step: int
    now: float = 0.0
    read_times: list[float] = field(default_factory=list)

    def read_view(self) -> RemoteTaskView:
        self.read_times.append(self.now)
        a = _artifact(0, self.signed)
        return RemoteTaskView("t", TaskState.COMPLETED, (a,), "d", "t")

    def fetch(self, a: SignedArtifact) -> bytes | None:
        return self.final[: int(self.now) * self.step]

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def run(self, policy: QuiescencePolicy = POLICY) -> Outcome:
        return verify_and_quiesce(
            self.read_view, self.fetch, lambda v: True, lambda: self.now, self.sleep, policy
        )


def test_bytes_still_arriving_are_waited_for_not_called_tampering() -> None:
    data = bytes(range(256)) * 4
    remote = Growing(data, data, step=40)  # 1,024 bytes: all there after 26 s
    out = remote.run()
    assert out.kind is OutcomeKind.QUIESCED and out.payloads == {"a0": data}
    assert remote.now >= 26


def test_bytes_short_at_the_bound_are_missing_not_an_integrity_failure() -> None:
    data = b"x" * 1000
    out = Growing(data, data, step=1).run()
    assert out.kind is OutcomeKind.INDETERMINATE and out.reason == "missing_artifacts"
    assert out.missing == ("a0",)


def test_the_declared_bytes_that_differ_are_tampering() -> None:
    data = b"x" * 100
    with pytest.raises(ArtifactIntegrityError) as err:
        Growing(data, b"y" * 100, step=30).run()
    assert err.value.code == "hash_mismatch" and err.value.actual_size == 100


def test_more_bytes_than_signed_are_tampering() -> None:
    data = b"x" * 100
    with pytest.raises(ArtifactIntegrityError) as err:
        Growing(data, data + b"!", step=101).run()
    assert err.value.code == "size_mismatch" and err.value.actual_size == 101


@pytest.mark.parametrize("interval", [0.0, 0.5, 2.0, 7.0])
def test_the_confirming_read_comes_at_least_the_interval_after_the_first(interval: float) -> None:
    data = b"ready"
    remote = Growing(data, data, step=100)
    remote.now = 3.0
    out = remote.run(replace(POLICY, confirm_interval=interval))
    assert out.kind is OutcomeKind.QUIESCED
    first, second = remote.read_times[-2:]
    assert second - first == pytest.approx(interval) and out.elapsed == pytest.approx(interval)


def test_a_change_within_the_confirming_interval_is_caught() -> None:
    """A manifest replaced 1.5 s after a stable-looking read: 80 ms between the two reads would
    have quiesced the old one; a 2 s interval sees the new one and goes round again."""
    old, new = _artifact(0, b"old"), _artifact(0, b"new")
    now = [0.0]

    def read() -> RemoteTaskView:
        if now[0] < 1.5:
            return RemoteTaskView("t", TaskState.COMPLETED, (old,), "d1", "t")
        return RemoteTaskView("t", TaskState.COMPLETED, (new,), "d2", "t")

    data = {old.sha256: b"old", new.sha256: b"new"}

    def quiesce(interval: float) -> Outcome:
        now[0] = 0.0
        policy = replace(POLICY, confirm_interval=interval)
        return verify_and_quiesce(
            read, lambda a: data[a.sha256], lambda v: True, lambda: now[0], _adder(now), policy
        )

    assert quiesce(0.08).payloads == {"a0": b"old"}
    assert quiesce(2.0).payloads == {"a0": b"new"}


def test_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        QuiescencePolicy(max_rounds=0)
    with pytest.raises(ValueError):
        QuiescencePolicy(confirm_interval=-1)
    with pytest.raises(ValueError):
        QuiescencePolicy(factor=0.5)
