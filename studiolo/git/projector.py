"""The projector: replays each project's publication log into its bare repository.

The ledger commits first; the projector follows (docs/git.md, "The protocol"). For each
publication above the branch's version it writes the commit (a pure function of the
ledger: parent, tree, author, times, message), the completion's note, then moves the notes
ref and the branch by compare-and-swap. A crash anywhere leaves the refs at a published
state; the next pass (at start, and on a timer) writes the same objects again, so the same
ids. Nothing here writes to the ledger."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from studiolo.core.model import Publication
from studiolo.git.dsse import envelope
from studiolo.git.message import COMMITTER, author_of, commit_message, completion_statement
from studiolo.git.mirrors import Mirrors
from studiolo.git.repository import BRANCH, CHECKPOINTS, NOTES, Change, GitRepo, RefMoved
from studiolo.keys import ServiceKey
from studiolo.store import Store, Tx

__all__ = ["Projector", "deleted_placeholder", "repository_path"]

log = logging.getLogger(__name__)


def deleted_placeholder(digest: str) -> bytes:
    """What a commit holds in place of bytes deleted before it was projected (or rebuilt):
    a pure function of the digest, so a replay writes the same commit again."""
    return f"studiolo: these bytes ({digest}) were deleted from the ledger\n".encode()


def repository_path(root: Path, project_id: str) -> Path:
    return root / f"{project_id}.git"


@dataclass
class _Inputs:
    """What a batch of publications needs from the ledger, read in one transaction."""

    blobs: dict[str, bytes] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    chain: dict[int, str | None] = field(default_factory=dict)
    receipts: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)  # task → (body, sig)
    key: ServiceKey | None = None


def _read_inputs(tx: Tx, pubs: Sequence[Publication]) -> _Inputs:
    """One statement per kind of input for the whole batch (not one per publication)."""
    got = _Inputs()
    key_text = tx.meta.get("service_key")
    got.key = ServiceKey.from_text(key_text) if key_text else None
    tasks = {
        task for pub in pubs if pub.kind == "completion" and isinstance(task := pub.meta.get("task"), str)
    }
    completions = tx.work.completions_of_tasks(sorted(tasks))
    got.chain = dict.fromkeys((pub.version for pub in pubs), None)
    got.chain.update(tx.publications.event_hashes([pub.version for pub in pubs]))
    for actor in sorted({pub.actor for pub in pubs if pub.actor}):
        who = tx.access.principal(actor)
        got.names[actor] = who.name if who else actor
    wanted = {digest for pub in pubs for digest, _mode in pub.changes.values() if digest}
    got.blobs = tx.content.blobs(wanted)
    for pub in pubs:
        gaps = {digest for digest, _mode in pub.changes.values() if digest and digest not in got.blobs}
        deleted = tx.retention.tombstones(pub.project_id, gaps)
        for digest in sorted(gaps):
            if digest not in deleted:
                raise LookupError(f"blob {digest} of version {pub.version} is missing from the ledger")
            got.blobs[digest] = deleted_placeholder(digest)
    for task, done in completions.items():
        if done is not None:
            got.receipts[task] = (dict(done.receipt), done.signature)
    return got


class Projector:
    """Publishes every project's log into `root/<project>.git`; `start()` runs it on a timer."""

    def __init__(
        self,
        store: Store,
        root: Path,
        *,
        interval: float = 2.0,
        checkpoint_every: float = 60.0,
        batch: int = 200,
        clock: Callable[[], float] = time.time,
        on_published: Callable[[str, int], None] | None = None,
        niceness: int | None = None,  # None: NICENESS
    ) -> None:
        self.store, self.root, self.interval, self.batch = store, root, interval, batch
        self.checkpoint_every, self.clock = checkpoint_every, clock
        self.on_published = on_published  # (project, version) after the branch moved (bench/git.py)
        self.niceness = NICENESS if niceness is None else niceness
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one pass at a time in this process
        self._checkpointed: dict[str, float] = {}
        self._owed: set[str] = set()  # published since their last checkpoint
        self._dirty: set[str] = set()  # projects whose log grew since the last pass (`poke`)
        self._dirty_lock = threading.Lock()
        self._listening = False
        self.mirrors = Mirrors()
        self.lagged: Callable[[float], None] | None = None  # told each commit's publication lag (s)

    def repo(self, project_id: str) -> GitRepo:
        return GitRepo(repository_path(self.root, project_id))

    # one pass ---------------------------------------------------------------------
    def run_once(self) -> int:
        """Publish every project's pending log; how many commits were published."""
        projects = self.store.read(lambda tx: tx.publications.projects())
        return sum(self.publish(pid) for pid in projects)

    def publish(self, project_id: str) -> int:
        """Publish the project's log above its branch; how many commits. One publisher at a
        time per repository: this process's lock, then a lock file other processes take too
        (the server's clone path and the projector's own process, `child.py`)."""
        with self._lock, self._file_lock(project_id):
            if self._exists(project_id):  # a publisher killed mid-write (kill -9) left these
                for stale in self.repo(project_id).clear_stale_locks():
                    log.warning("%s: removed %s, left by a killed publisher", project_id, stale)
            count = 0
            while True:
                n = self._publish_batch(project_id)
                count += n
                if n < self.batch:
                    break
            if count:
                self._owed.add(project_id)
            since = self.clock() - self._checkpointed.get(project_id, 0.0)
            owed = project_id in self._owed
            if since >= (CHECKPOINT_MIN if owed else self.checkpoint_every):
                self._owed.discard(project_id)
                self.checkpoint(project_id)
            if self._exists(project_id):
                self.mirrors.push(self.repo(project_id))  # those that lag and are due
            return count

    @contextlib.contextmanager
    def _file_lock(self, project_id: str) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / f".{project_id}.publish-lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _publish_batch(self, project_id: str) -> int:
        opened = self.repo(project_id) if self._exists(project_id) else None  # one open a batch
        head, version = opened.tip(BRANCH) if opened is not None else (None, 0)

        def read(tx: Tx) -> tuple[list[Publication], _Inputs]:  # the log and its inputs: one read
            pubs = tx.publications.after(project_id, version, self.batch)
            return pubs, _read_inputs(tx, pubs) if pubs else _Inputs()

        pubs, inputs = self.store.read(read)
        if not pubs:
            return 0
        repo = opened if opened is not None else self.repo(project_id)
        notes_tip, noted = repo.tip(NOTES)
        notes = notes_tip
        tip = head
        with repo.batch():  # the pass's objects in one pack, written before any ref moves
            for pub in pubs:
                tip = self._commit(repo, tip, pub, inputs)
                notes = self._note(repo, notes, noted, tip, pub, inputs)
        if notes is not None and notes != notes_tip:
            repo.advance(NOTES, notes_tip, notes)  # notes first: they name commits the branch will hold
        assert tip is not None
        repo.advance(BRANCH, head, tip)
        if self.lagged is not None:
            now = self.clock()
            for pub in pubs:
                self.lagged(now - pub.at)
        if self.on_published is not None:
            self.on_published(project_id, pubs[-1].version)
        return len(pubs)

    def _exists(self, project_id: str) -> bool:
        return (repository_path(self.root, project_id) / "HEAD").is_file()

    @staticmethod
    def _commit(repo: GitRepo, parent: pygit2.Oid | None, pub: Publication, inputs: _Inputs) -> pygit2.Oid:
        changes = {
            path: None if digest is None else Change(repo.blob(inputs.blobs[digest]), mode)
            for path, (digest, mode) in pub.changes.items()
        }
        if pub.kind in ("import", "baseline"):  # the tree is exactly what it lists
            tree = repo.apply(None, {p: c for p, c in changes.items() if c is not None})
        else:
            tree = repo.apply(repo.tree_of(parent), changes)
        author = author_of(inputs.names.get(pub.actor or ""), pub.actor)
        return repo.commit(tree, parent, author, pub.at, commit_message(pub, inputs.chain.get(pub.version)))

    @staticmethod
    def _note(
        repo: GitRepo,
        notes: pygit2.Oid | None,
        noted: int,
        commit: pygit2.Oid,
        pub: Publication,
        inputs: _Inputs,
    ) -> pygit2.Oid | None:
        """The notes commit after this publication's note (a completion's receipt); unchanged
        for other publications and for those the notes ref already holds (`noted`)."""
        task = pub.meta.get("task")
        if (
            pub.kind != "completion"
            or pub.version <= noted
            or inputs.key is None
            or not isinstance(task, str)
        ):
            return notes
        body, signature = inputs.receipts[task]
        statement = completion_statement(pub, str(commit), body, signature, inputs.chain.get(pub.version))
        text = json.dumps(envelope(statement, inputs.key), sort_keys=True, indent=2) + "\n"
        tree = repo.note_tree(notes, commit, text)
        message = f"Note of Studiolo-Version {pub.version}\n\nStudiolo-Version: {pub.version}\n"
        return repo.commit(tree, notes, COMMITTER, pub.at, message)

    # checkpoints --------------------------------------------------------------------
    def checkpoint(self, project_id: str) -> pygit2.Oid | None:
        """Commit a signed statement of the project's audit chain head (and the branch it
        has published) to `refs/studiolo/checkpoints`, if the head moved since the last."""
        if not self._exists(project_id):
            return None
        self._checkpointed[project_id] = self.clock()
        repo = self.repo(project_id)
        head, version = repo.tip(BRANCH)
        chain, key_text = self.store.read(lambda tx: (tx.audit.head(project_id), tx.meta.get("service_key")))
        if key_text is None:
            return None
        last, _ = repo.tip(CHECKPOINTS)
        statement = _checkpoint_statement(project_id, head, version, chain.seq, chain.hash, self.clock())
        if last is not None and _same_chain(repo, last, chain.seq):
            return None
        text = json.dumps(envelope(statement, ServiceKey.from_text(key_text)), sort_keys=True, indent=2)
        message = f"Checkpoint of chain {project_id} at {chain.seq}\n\nStudiolo-Version: {version}\n"
        with repo.batch():  # a pack, fsynced before the ref moves (no loose objects)
            tree = repo.apply(None, {"checkpoint.json": Change(repo.blob(text.encode() + b"\n"), None)})
            new = repo.commit(tree, last, COMMITTER, self.clock(), message)
        try:
            repo.advance(CHECKPOINTS, last, new)
        except RefMoved:
            return None  # another pass wrote one meanwhile
        return new

    # the timer and the wake ---------------------------------------------------------
    def start(self) -> None:
        """Replay every project's log now (recovery), then publish a project as soon as a
        write logs a change of it (the store's `on_publication` wakes the thread), and every
        project on the timer (recovery, checkpoints, mirrors)."""
        if not self._listening:
            self.store.on_publication(self.poke)
            self._listening = True
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="studiolo-git-projector", daemon=True)
        self._thread.start()

    def poke(self, project_id: str | None = None) -> None:
        """Wake the thread: to publish `project_id`, or (None) for a pass over every project."""
        with self._dirty_lock:
            self._dirty.add(project_id or "")
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        yield_cpu(self.niceness)
        due = 0.0  # the next pass over every project (time.monotonic)
        while not self._stop.is_set():
            with self._dirty_lock:
                dirty, self._dirty = self._dirty, set()
            try:
                if "" in dirty or time.monotonic() >= due:
                    due = time.monotonic() + self.interval
                    self.run_once()
                else:
                    for project_id in sorted(dirty):
                        self.publish(project_id)
            except Exception:
                log.exception("git projection failed; retrying")
            self._wake.wait(max(0.0, due - time.monotonic()))
            self._wake.clear()  # a poke after this sets it again: nothing is missed


CHECKPOINT_MIN = 1.0  # a checkpoint after a pass that published, at most this often (seconds)
NICENESS = 5  # the projector's thread gives the CPU to the request path when both want it


def yield_cpu(niceness: int | None = None) -> None:
    """Lower the calling thread's scheduling priority (Linux: a thread's own nice value);
    publication lags, a completion waits. Nothing where the OS refuses."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS if niceness is None else niceness)


def _checkpoint_statement(
    project_id: str, head: pygit2.Oid | None, version: int, seq: int, chain_hash: str, at: float
) -> dict[str, Any]:
    subject = [{"name": BRANCH, "digest": {"gitCommit": str(head)}}] if head is not None else []
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subject,
        "predicateType": "https://studiolo.invalid/audit-checkpoint/v1",
        "predicate": {
            "project": project_id,
            "chain": {"seq": seq, "hash": chain_hash},
            "published_version": version,
            "at": int(at),
        },
    }


def _same_chain(repo: GitRepo, checkpoint: pygit2.Oid, seq: int) -> bool:
    files = repo.files(checkpoint)
    data = files.get("checkpoint.json")
    if data is None:
        return False
    payload = json.loads(base64.b64decode(json.loads(data[0])["payload"]))
    return bool(payload["predicate"]["chain"]["seq"] == seq)
