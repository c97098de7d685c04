"""The refusal of an oversize push, in git's receive-pack result: read by a real `git push`
in tests/git/test_push.py; here, any request head gives a well-formed answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from studiolo.git.pktline import refused_push


def _packets(data: bytes) -> list[bytes | None]:
    """The pkt-lines of `data` (None: a flush); raises if it is not a sequence of them."""
    out: list[bytes | None] = []
    at = 0
    while at < len(data):
        size = int(data[at : at + 4], 16)
        assert size == 0 or 4 < size <= 65520
        out.append(None if size == 0 else data[at + 4 : at + size])
        at += size or 4
    return out


def _head(ref: bytes, caps: bytes) -> bytes:
    line = b"0" * 40 + b" " + b"1" * 40 + b" " + ref + b"\0" + caps + b"\n"
    return f"{len(line) + 4:04x}".encode() + line + b"0000PACK..."


def test_a_sideband_client_reads_the_message_and_each_ref_refused() -> None:
    head = _head(b"refs/heads/main", b"report-status side-band-64k quiet agent=git/2.43")
    packets = _packets(refused_push(head, "too large\nsecond line"))
    assert packets[:2] == [b"\2studiolo: too large\n", b"\2studiolo: second line\n"]
    assert packets[-1] is None and all(p is not None and p[:1] == b"\1" for p in packets[2:-1])
    status = b"".join(p[1:] for p in packets[2:-1] if p is not None)
    assert _packets(status) == [b"unpack refused by studiolo\n", b"ng refs/heads/main too large\n", None]


def test_without_a_sideband_the_status_alone() -> None:
    packets = _packets(refused_push(_head(b"refs/for/t", b"report-status"), "why"))
    assert packets == [b"unpack refused by studiolo\n", b"ng refs/for/t why\n", None]


@given(st.binary(max_size=300), st.text(max_size=100))
def test_any_head_gives_well_formed_packets(head: bytes, message: str) -> None:
    _packets(refused_push(head, message))
