"""The client loads no CA bundle for plain HTTP, and that shortcut cannot weaken TLS."""

from __future__ import annotations

import ssl

from studiolo.client import _verify


def test_https_verifies_as_httpx_does() -> None:
    assert _verify("https://studiolo.example") is True


def test_plain_http_trusts_no_certificate() -> None:
    ctx = _verify("http://127.0.0.1:8765")
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] == 0  # so a TLS handshake to anyone fails
