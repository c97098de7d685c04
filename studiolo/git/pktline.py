"""A push refused before git sees it, answered in git's own receive-pack result: the message
on the sideband's progress channel (what the pusher reads as `remote: ...`) and each ref
reported `ng`, so `git push` says why instead of `RPC failed; HTTP 413` (docs/git.md,
"Writing through git"). Only the head of the request is read: its command pkt-lines."""

from __future__ import annotations

__all__ = ["RESULT_TYPE", "refused_push"]

RESULT_TYPE = "application/x-git-receive-pack-result"
_FLUSH = b"0000"
_MAX_DATA = 65515  # a side-band-64k packet: 65520 bytes, its length and band included


def _pkt(data: bytes) -> bytes:
    return f"{len(data) + 4:04x}".encode() + data


def _commands(head: bytes) -> tuple[list[bytes], set[bytes]]:
    """The refs a receive-pack request updates and the capabilities its first line asks for
    (both empty where the head is not well formed: the answer is then sent without them)."""
    refs: list[bytes] = []
    caps: set[bytes] = set()
    at = 0
    while at + 4 <= len(head):
        try:
            size = int(head[at : at + 4], 16)
        except ValueError:
            break
        if size == 0 or size < 4 or at + size > len(head):
            break  # the flush that ends the commands (the pack follows), or a cut line
        line, _, extra = head[at + 4 : at + size].rstrip(b"\n").partition(b"\0")
        if not refs:
            caps = set(extra.split())
        parts = line.split(b" ")
        if len(parts) == 3:
            refs.append(parts[2])
        at += size
    return refs, caps


def refused_push(head: bytes, message: str) -> bytes:
    """The receive-pack result refusing every ref the request names, with `message` on the
    progress band where the client asked for a sideband (else in each ref's reason)."""
    refs, caps = _commands(head)
    reason = message.strip().splitlines()[0][:200] if message.strip() else "refused"
    status = _pkt(b"unpack refused by studiolo\n") + b"".join(
        _pkt(b"ng " + ref + b" " + reason.encode() + b"\n") for ref in refs
    )
    status += _FLUSH
    if b"report-status" not in caps and b"report-status-v2" not in caps:
        status = b""
    if b"side-band-64k" not in caps and b"side-band" not in caps:
        return status
    band = _MAX_DATA if b"side-band-64k" in caps else 995
    out = b"".join(
        _pkt(b"\2" + line.encode()[:band])
        for line in (f"studiolo: {text}\n" for text in message.strip().splitlines())
    )
    out += b"".join(_pkt(b"\1" + status[i : i + band]) for i in range(0, len(status), band))
    return out + _FLUSH
