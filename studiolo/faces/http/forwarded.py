"""The client address of a request that came through a trusted reverse proxy.

Behind a proxy every connection's peer address is the proxy's, so a per-address limit
counts every client as one. A peer inside `STUDIOLO_TRUSTED_PROXIES` (CIDRs) may name the
client: `X-Forwarded-For` if the request has one, else `Forwarded` (RFC 7239, its `for=`).
The list is read from the right, skipping the addresses of trusted proxies: the first
other entry is the client, as the nearest trusted proxy saw it; whatever a client wrote
further left is never believed. A peer outside the list names nobody.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence

__all__ = ["Networks", "client_address", "is_trusted", "parse_networks"]

Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

_MAX_HOPS = 32  # entries read from the right; a longer list is someone else's invention
_FOR = re.compile(r'(?:^|;)\s*for\s*=\s*("[^"]*"|[^;,\s]*)', re.IGNORECASE)


def parse_networks(cidrs: Iterable[str]) -> Networks:
    """CIDRs (or single addresses) as networks; ValueError names a bad one."""
    out = []
    for text in cidrs:
        try:
            out.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"not an address or CIDR: {text!r}") from exc
    return tuple(out)


def is_trusted(address: str, trusted: Networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # a dual-stack socket's spelling of an IPv4 peer
    return any(ip in net for net in trusted)


def client_address(peer: str, headers: Sequence[tuple[bytes, bytes]], trusted: Networks) -> str:
    """The address a request is counted under: the peer's, unless a trusted proxy names another."""
    if not is_trusted(peer, trusted):
        return peer
    hops = _hops(headers)
    for hop in reversed(hops[-_MAX_HOPS:]):
        if not is_trusted(hop, trusted):
            return hop
    return hops[0] if hops else peer  # only trusted proxies: the farthest of them


def _hops(headers: Sequence[tuple[bytes, bytes]]) -> list[str]:
    xff = [v for k, v in headers if k.lower() == b"x-forwarded-for"]
    if xff:
        return [_address(h) for v in xff for h in v.decode("latin-1").split(",") if h.strip()]
    forwarded = [v for k, v in headers if k.lower() == b"forwarded"]
    hops = []
    for value in forwarded:
        for element in value.decode("latin-1").split(","):
            found = _FOR.search(element)
            if found:
                hops.append(_address(found.group(1)))
    return hops


def _address(raw: str) -> str:
    """One hop as an address: quotes, brackets and a port dropped (`"[2001:db8::1]:4711"`)."""
    text = raw.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else text[1:]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]  # IPv4 with a port
    return text[:100]  # `unknown`, an obfuscated name: counted as given, bounded
