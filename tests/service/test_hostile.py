"""Hostile input at the door: each a clear structured error, nothing changed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from studiolo import Conflict, InvalidRequest, NotAuthorized, NotFound, PayloadTooLarge, StudioloError
from studiolo.core.paths import normalize_path
from studiolo.keys import sign
from studiolo.service import CandidateDraft, make_request
from tests.service.snapshot import snapshot
from tests.world import World


def _unchanged(world: World, action: Callable[[], object], error: type[StudioloError], reason: str) -> None:
    before = snapshot(world.coord.store)
    with pytest.raises(error) as err:
        action()
    assert err.value.reason == reason, err.value.to_dict()
    assert err.value.detail
    assert snapshot(world.coord.store) == before


@pytest.mark.parametrize(
    "bad", ["", "x", "tsk_", "tsk_../../etc", "TSK_abcdefgh", "tsk_" + "a" * 200, "tsk_a b c d e"]
)
def test_malformed_ids(world: World, bad: str) -> None:
    _unchanged(world, lambda: world.coord.claim(world.agent, bad, 60), InvalidRequest, "invalid_request")
    _unchanged(world, lambda: world.coord.heartbeat(world.agent, bad), InvalidRequest, "invalid_request")


def test_malformed_completion_requests(world: World) -> None:
    good = {
        "request_id": "r",
        "task_id": "tsk_abcdefgh",
        "attempt_id": "att_abcdefgh",
        "fence": 1,
        "contract_hash": "sha256:" + "0" * 64,
        "candidate_id": "cnd_abcdefgh",
        "evidence": [],
    }
    for key, value in [
        ("fence", -1),
        ("fence", True),
        ("request_id", ""),
        ("request_id", "x" * 201),
        ("request_id", "a\nb"),
        ("evidence", ["nope"]),
        ("evidence", ["rcp_abcdefgh"] * 101),
    ]:
        with pytest.raises(InvalidRequest):
            make_request(**{**good, key: value})  # type: ignore[arg-type]


def test_oversized_blob(world: World) -> None:
    limit = world.coord.settings.max_blob_bytes
    _unchanged(
        world,
        lambda: world.coord.put_blob(world.agent, b"x" * (limit + 1)),
        PayloadTooLarge,
        "payload_too_large",
    )


@pytest.mark.parametrize(
    "path", ["../outside.txt", "src/../../etc/passwd", "src/\x00nul", "", "src/a\x1b[31m"]
)
def test_bad_paths_in_candidates_and_edits(world: World, path: str) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    digest = world.put(b"data")
    draft = CandidateDraft({path: digest}, {path: 0}, {}, {})
    _unchanged(
        world,
        lambda: world.coord.submit_candidate(world.agent, att.id, draft),
        InvalidRequest,
        "invalid_path",
    )
    _unchanged(
        world,
        lambda: world.coord.edit_artifact(world.human, world.project_id, path, digest, 0),
        InvalidRequest,
        "invalid_path",
    )


def test_two_spellings_of_one_path_are_one_path(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    d1, d2 = world.put(b"one"), world.put(b"two")
    draft = CandidateDraft({"src/x.txt": d1, "/src//./x.txt": d2}, {"src/x.txt": 0}, {}, {})
    _unchanged(
        world,
        lambda: world.coord.submit_candidate(world.agent, att.id, draft),
        InvalidRequest,
        "invalid_request",
    )
    same = world.coord.submit_candidate(
        world.agent, att.id, CandidateDraft({"./src/x.txt": d1}, {"src//x.txt": 0}, {}, {})
    )
    assert set(same.files) == {"src/x.txt"} and same.bases == {"src/x.txt": 0}


def test_candidate_must_declare_every_target_base(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    draft = CandidateDraft({"src/answer.txt": world.put(b"1")}, {}, {}, {})
    _unchanged(
        world,
        lambda: world.coord.submit_candidate(world.agent, att.id, draft),
        InvalidRequest,
        "invalid_request",
    )


def test_unuploaded_blob_in_candidate(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    ghost = "sha256:" + "9" * 64
    draft = CandidateDraft({"src/answer.txt": ghost}, {"src/answer.txt": 1}, {}, {})
    _unchanged(
        world,
        lambda: world.coord.submit_candidate(world.agent, att.id, draft),
        InvalidRequest,
        "blob_missing",
    )


def test_unknown_checker_in_a_contract(world: World) -> None:
    _unchanged(
        world, lambda: world.new_task(criteria={"tests": "nosuch@9"}), InvalidRequest, "unknown_checker"
    )


def test_receipt_from_a_non_verifier(world: World) -> None:
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"42\n"})
    body = {
        "task_id": task.id,
        "attempt_id": att.id,
        "contract_hash": task.contract_hash,
        "candidate_digest": cand.digest,
        "dependency_digest": cand.dependency_digest,
        "criterion": "tests",
        "checker": "unit@1",
        "result": "pass",
        "issued_at": 1,
        "issuer": world.agent.id,
        "log_digest": None,
    }
    sig = sign(world.verifier_key, body)
    _unchanged(
        world,
        lambda: world.coord.submit_receipt(world.agent, cand.id, body, sig),
        NotAuthorized,
        "verifier_not_admitted",
    )
    bad_body = {**body, "issuer": world.verifier.id, "result": "maybe"}
    _unchanged(
        world,
        lambda: world.coord.submit_receipt(world.verifier, cand.id, bad_body, sig),
        InvalidRequest,
        "invalid_request",
    )
    forged = {**body, "issuer": world.verifier.id}
    _unchanged(
        world,
        lambda: world.coord.submit_receipt(world.verifier, cand.id, forged, sig),
        InvalidRequest,
        "signature_invalid",
    )


def test_non_admin_cannot_administer(world: World) -> None:
    pid = world.project_id
    _unchanged(
        world,
        lambda: world.coord.publish_policy(world.agent, pid, "mine now"),
        NotAuthorized,
        "not_authorized",
    )
    _unchanged(
        world,
        lambda: world.coord.grant(world.agent, pid, world.agent.id, ["admin"]),
        NotAuthorized,
        "not_authorized",
    )
    _unchanged(
        world,
        lambda: world.coord.revoke_grant(world.agent, world.grants["agent2"]),
        NotAuthorized,
        "not_authorized",
    )


def test_other_projects_are_invisible(world: World) -> None:
    other = world.coord.create_project(world.admin, "elsewhere")
    _unchanged(world, lambda: world.coord.list_tasks(world.agent, other.id), NotFound, "not_found")
    task = world.new_task()
    stranger = world.coord.add_principal(world.admin, other.id, "stranger", "agent").principal
    world.coord.grant(world.admin, other.id, stranger.id, ["read", "claim"])
    _unchanged(world, lambda: world.coord.claim(stranger, task.id, 60), NotFound, "task_not_found")


def test_bad_lease_values(world: World) -> None:
    task = world.new_task()
    for lease in (0, -5, float("nan"), float("inf"), 10**9):
        _unchanged(
            world,
            lambda lease=lease: world.coord.claim(world.agent, task.id, lease),
            InvalidRequest,
            "invalid_request",
        )


def test_blobs_are_readable_only_where_they_were_uploaded_or_published(world: World) -> None:
    secret = world.put(b"the launch code is 0000")
    assert world.coord.get_blob(world.verifier, secret) == b"the launch code is 0000"
    other = world.coord.create_project(world.admin, "elsewhere")
    spy = world.coord.add_principal(world.admin, other.id, "spy", "agent").principal
    world.coord.grant(world.admin, other.id, spy.id, ["read", "write", "claim", "complete"])
    _unchanged(world, lambda: world.coord.get_blob(spy, secret), NotFound, "blob_missing")
    # knowing a digest is not enough to publish its bytes into another project
    _unchanged(
        world,
        lambda: world.coord.edit_artifact(spy, other.id, "src/x.txt", secret, 0),
        InvalidRequest,
        "blob_missing",
    )
    # uploading the same bytes proves possession: then they are readable there too
    assert world.coord.put_blob(spy, b"the launch code is 0000") == secret
    assert world.coord.get_blob(spy, secret) == b"the launch code is 0000"


def test_scope_at_submission(world: World) -> None:
    """Finding: a candidate writing outside the task's scope reached the verifiers."""
    task = world.new_task(scope=["src/**"])
    att = world.coord.claim(world.agent, task.id, 60)
    steal, make = world.put(b"import os\n"), world.put(b"test:\n\tpython src/steal.py\n")
    draft = CandidateDraft(
        {"src/steal.py": steal, "Makefile": make}, {"src/steal.py": 0, "Makefile": 0}, {}, {}
    )
    _unchanged(
        world,
        lambda: world.coord.submit_candidate(world.agent, att.id, draft),
        Conflict,
        "scope_violation",
    )
    assert world.coord.verification_queue(world.verifier, world.project_id) == []


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".GIT/config",
        "src/.Git/config",
        "src/.git",
        "docs/.git./hooks/x",
        "GIT~1/config",  # issue 32, finding 9: the NTFS spellings every client refuses
        ".git::$INDEX_ALLOCATION/config",
        "src/.g\u200dit/config",
    ],
)
def test_git_segments(world: World, path: str) -> None:
    """Finding: an editor wrote the artifact `.git/config`; checkouts then ran its fsmonitor."""
    task = world.new_task(scope=["**"])
    att = world.coord.claim(world.agent, task.id, 60)
    digest = world.put(b"[core]\n\tfsmonitor = touch /tmp/pwned\n")
    draft = CandidateDraft({path: digest}, {path: 0}, {}, {})
    _unchanged(
        world,
        lambda: world.coord.submit_candidate(world.agent, att.id, draft),
        InvalidRequest,
        "invalid_path",
    )
    _unchanged(
        world,
        lambda: world.coord.edit_artifact(world.human, world.project_id, path, digest, 0),
        InvalidRequest,
        "invalid_path",
    )
    assert normalize_path("src/.gitignore") == "src/.gitignore"  # only the segment itself


def test_strict_types_at_the_door(world: World) -> None:
    """Finding (Low): `lease_seconds` took `true` and 1e-300; `issued_at` > 2^53 was a 500."""
    task = world.new_task()
    for lease in (True, 1e-300, 0.5, "600"):
        _unchanged(
            world,
            lambda lease=lease: world.coord.claim(world.agent, task.id, lease),
            InvalidRequest,
            "invalid_request",
        )
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"42\n"})
    body = {
        "task_id": task.id,
        "attempt_id": att.id,
        "contract_hash": task.contract_hash,
        "candidate_digest": cand.digest,
        "dependency_digest": cand.dependency_digest,
        "criterion": "tests",
        "checker": "unit@1",
        "result": "pass",
        "issuer": world.verifier.id,
        "log_digest": None,
    }
    for issued in (2**53, 10**400):
        _unchanged(
            world,
            lambda issued=issued: world.coord.submit_receipt(
                world.verifier, cand.id, {**body, "issued_at": issued}, "A" * 86
            ),
            InvalidRequest,
            "invalid_request",
        )
