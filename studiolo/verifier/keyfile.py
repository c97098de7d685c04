"""A verifier's private key on disk: PKCS#8 PEM, unencrypted, mode 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from studiolo.keys import new_private_key, public_key_text

__all__ = ["KeyFileError", "generate_key_file", "load_key_file"]


class KeyFileError(Exception):
    """A key file that is missing, unreadable, too open, or not an Ed25519 private key."""


def generate_key_file(path: Path, *, force: bool = False) -> str:
    """Write a new private key to `path` (0600, never over an existing file unless `force`);
    return its public key (base64url), the text to register for the verifier principal."""
    key = new_private_key()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError as exc:
        raise KeyFileError(f"{path} exists; pass --force to replace it") from exc
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(pem)
    return public_key_text(key)


def load_key_file(path: Path) -> Ed25519PrivateKey:
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read the key file {path}: {exc.strerror}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"{path} is readable by others (mode {stat.S_IMODE(mode):o}); chmod 600 it")
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path} is not an unencrypted PEM private key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key
