"""The key secrets are sealed under: `SECRETS_KEY`, or for a SQLite ledger without it, `secrets.key` beside the
ledger file, made at the first start and readable only by its owner (seeds, `SECRETS_KEY`).

A PostgreSQL ledger needs `SECRETS_KEY` (the settings refuse to start without it), since every server sharing the
database must seal and read with the same key.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import stat
from pathlib import Path

from .files import make_private_folder

KEY_FILE_NAME = "secrets.key"
KEY_BYTES = 32


class SecretsKeyError(Exception):
    """The key file cannot be used; the message names the file, never its content."""


def _read_key_file(path: Path) -> bytes:
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretsKeyError(f"{path}: the secrets key file may be readable only by its owner (chmod 600 it)")
    try:
        key = base64.b64decode(path.read_text().strip(), validate=True)
    except (ValueError, binascii.Error):
        raise SecretsKeyError(f"{path}: expects the base64 of 32 random bytes") from None
    if len(key) != KEY_BYTES:
        raise SecretsKeyError(f"{path}: expects the base64 of 32 random bytes")
    return key


def _make_key_file(path: Path) -> bytes:
    key = secrets.token_bytes(KEY_BYTES)
    make_private_folder(path.parent)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(base64.b64encode(key).decode("ascii") + "\n")
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        path.unlink(missing_ok=True)  # a key half written (a full disk) would be refused at every later start
        raise
    return key


def secrets_key_of(configured: bytes | None, ledger_file: Path | None) -> bytes:
    """`SECRETS_KEY` when set; else the key file beside the SQLite ledger, made when missing."""
    if configured is not None:
        return configured
    if ledger_file is None:
        raise SecretsKeyError("SECRETS_KEY: a ledger in PostgreSQL needs the key set in the environment")
    path = ledger_file.parent / KEY_FILE_NAME
    try:
        return _make_key_file(path)
    except FileExistsError:
        return _read_key_file(path)
