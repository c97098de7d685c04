"""Behind a reverse proxy (issue 32, Also): one peer address shared the per-address
connection cap, so one slow client behind the proxy locked out every other. A trusted proxy
names the client (X-Forwarded-For / Forwarded) and each request counts under it."""

from __future__ import annotations

import socket

import pytest

from studiolo.faces.http.forwarded import client_address, parse_networks
from studiolo.settings import Settings
from tests.faces.test_http_hardening import _closed_by_server, _connect, _response_head, _serving
from tests.world import World

PROXY = parse_networks(["10.0.0.0/8", "fd00::/8"])


def _h(*pairs: tuple[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode(), v.encode()) for k, v in pairs]


@pytest.mark.parametrize(
    ("peer", "headers", "client"),
    [
        ("10.1.1.1", _h(("X-Forwarded-For", "203.0.113.5")), "203.0.113.5"),
        # what the client wrote left of what the proxy appended is never believed
        ("10.1.1.1", _h(("X-Forwarded-For", "1.2.3.4, 203.0.113.5")), "203.0.113.5"),
        (
            "10.1.1.1",
            _h(("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-For", "203.0.113.5, 10.2.2.2")),
            "203.0.113.5",
        ),
        ("10.1.1.1", _h(("Forwarded", 'for="[2001:db8::17]:4711";proto=https')), "2001:db8::17"),
        ("10.1.1.1", _h(("Forwarded", "for=1.2.3.4, for=198.51.100.7:8080;by=10.1.1.1")), "198.51.100.7"),
        ("10.1.1.1", _h(("X-Forwarded-For", "10.3.3.3")), "10.3.3.3"),  # only proxies: the farthest
        ("10.1.1.1", [], "10.1.1.1"),  # no header: the proxy itself (a health check)
        ("fd00::1", _h(("X-Forwarded-For", "2001:db8::9")), "2001:db8::9"),
        ("::ffff:10.1.1.1", _h(("X-Forwarded-For", "203.0.113.5")), "203.0.113.5"),  # dual-stack
        # an untrusted peer names nobody, whatever it sends
        ("192.0.2.1", _h(("X-Forwarded-For", "203.0.113.5"), ("Forwarded", "for=1.1.1.1")), "192.0.2.1"),
    ],
)
def test_the_client_is_the_rightmost_address_no_trusted_proxy_added(
    peer: str, headers: list[tuple[bytes, bytes]], client: str
) -> None:
    assert client_address(peer, headers, PROXY) == client


def test_the_setting_is_read_and_checked() -> None:
    env = {"STUDIOLO_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.10 fd00::/8"}
    assert Settings.from_env(env).trusted_proxies == ("10.0.0.0/8", "192.168.1.10", "fd00::/8")
    assert Settings.from_env({}).trusted_proxies == ()
    with pytest.raises(ValueError, match="not-a-cidr"):
        Settings.from_env({"STUDIOLO_TRUSTED_PROXIES": "not-a-cidr"})


def _stalled_body(port: int, token: str, client: str) -> socket.socket:
    sock = _connect(port)
    head = (
        "POST /v1/blobs HTTP/1.1\r\nHost: studiolo\r\n"
        f"Authorization: Bearer {token}\r\nX-Forwarded-For: {client}\r\n"
        "Content-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\n"
    )
    sock.sendall(head.encode() + b"x" * 10)
    return sock


def _health(port: int, client: str) -> int:
    with _connect(port) as sock:
        sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: studiolo\r\nX-Forwarded-For: {client}\r\n\r\n".encode())
        return _response_head(sock)[0]


def test_one_slow_client_behind_a_trusted_proxy_locks_out_only_itself(world: World) -> None:
    settings = {"max_connections_per_address": 2, "trusted_proxies": ("127.0.0.1/32",)}
    with _serving(world, **settings) as (live, server):
        slow = [_stalled_body(server.port, live.tokens["agent"], "203.0.113.5") for _ in range(2)]
        try:
            with _connect(server.port) as third:
                third.sendall(
                    b"GET /healthz HTTP/1.1\r\nHost: studiolo\r\nX-Forwarded-For: 203.0.113.5\r\n\r\n"
                )
                status, headers, body = _response_head(third)
                assert status == 503 and b"overloaded" in body and headers["retry-after"] == "1"
            # every other client behind the same proxy address is served
            assert [_health(server.port, f"198.51.100.{i}") for i in range(5)] == [200] * 5
        finally:
            for sock in slow:
                sock.close()
        assert _health(server.port, "203.0.113.5") == 200  # its requests ended: its slots are free


def test_an_untrusted_peer_cannot_name_other_clients(world: World) -> None:
    settings = {"max_connections_per_address": 2, "trusted_proxies": ("127.0.0.1/32",)}
    with _serving(world, **settings) as (_, server):
        held = [_connect(server.port, "127.0.0.9") for _ in range(2)]
        try:
            surplus = _connect(server.port, "127.0.0.9")
            surplus.sendall(b"GET /healthz HTTP/1.1\r\nHost: s\r\nX-Forwarded-For: 198.51.100.1\r\n\r\n")
            assert _closed_by_server(surplus, 5)
            surplus.close()
        finally:
            for sock in held:
                sock.close()
