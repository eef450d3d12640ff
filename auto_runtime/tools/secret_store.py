"""The secret store: values sealed under `SECRETS_KEY` and kept in the ledger's secret rows.

Each value is sealed with AES-256-GCM (`cryptography`) under a key derived from `SECRETS_KEY` with HKDF-SHA256
and a label of its own (the MCP request-state key derives from the same key under another label), with a random
96-bit nonce per seal and, as associated data, the scope and name it is kept under: a sealed value copied to
another org's or another name's row does not open. A sealed value is

    version (1 byte, 1) | key id (8 bytes) | nonce (12 bytes) | ciphertext and tag

where the key id is derived from the key (it names the key without revealing it), so a value sealed under
`SECRETS_KEY_PREVIOUS` is opened with that key.

Rotation (seeds, `SECRETS_KEY_PREVIOUS`): `reseal` runs at start, before anything is served; every row sealed
under the previous key is sealed again under the current one (a compare-and-set, so servers starting together
agree). Until the previous key is dropped, a value still sealed under it (a row another server wrote meanwhile)
is opened with it. A value sealed under a key the server does not hold, or altered, raises `SecretUnreadable`,
whose words name the row, never a value.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from auto_runtime.ledger import Ledger, Scope

log = logging.getLogger("auto_runtime.tools.secrets")

VERSION = 1
KEY_ID_BYTES = 8
NONCE_BYTES = 12
HEADER_BYTES = 1 + KEY_ID_BYTES + NONCE_BYTES
SEAL_LABEL = b"auto-runtime secret store: sealing key"
KEY_ID_LABEL = b"auto-runtime secret store: key id"
ENDS_WITH_FROM = 12
"""A value of at least this many characters shows its last four (`credential_ends_with`)."""


class SecretUnreadable(Exception):
    """A sealed value that no key of this server opens (sealed under another key, or altered)."""


def _derive(key: bytes, label: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=label).derive(key)


def ends_with_of(value: str) -> str | None:
    """The last four characters of a value of twelve characters or more, else None."""
    return value[-4:] if len(value) >= ENDS_WITH_FROM else None


def _associated(scope_key: str, name: str) -> bytes:
    return f"auto-runtime secret\x00{scope_key}\x00{name}".encode()


@dataclass(frozen=True, slots=True)
class SealingKey:
    """One `SECRETS_KEY` as the store uses it: the derived cipher key and the key id."""

    key_id: bytes
    cipher: AESGCM

    @classmethod
    def of(cls, key: bytes) -> SealingKey:
        return cls(_derive(key, KEY_ID_LABEL, KEY_ID_BYTES), AESGCM(_derive(key, SEAL_LABEL, 32)))

    def seal(self, scope_key: str, name: str, value: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self.cipher.encrypt(nonce, value.encode("utf-8"), _associated(scope_key, name))
        return bytes([VERSION]) + self.key_id + nonce + sealed


class SecretSealer:
    """Seals under the current key; opens under the current or the previous one."""

    def __init__(self, key: bytes, previous: bytes | None = None) -> None:
        self.current = SealingKey.of(key)
        self.previous = SealingKey.of(previous) if previous is not None and previous != key else None

    def seal(self, scope_key: str, name: str, value: str) -> bytes:
        return self.current.seal(scope_key, name, value)

    def sealed_under_current(self, sealed: bytes) -> bool:
        return sealed[1 : 1 + KEY_ID_BYTES] == self.current.key_id

    def open(self, scope_key: str, name: str, sealed: bytes) -> str:
        where = f"the secret {name} of {scope_key}"
        if len(sealed) <= HEADER_BYTES or sealed[0] != VERSION:
            raise SecretUnreadable(f"{where} is not a value this runtime sealed")
        key_id, nonce = sealed[1 : 1 + KEY_ID_BYTES], sealed[1 + KEY_ID_BYTES : HEADER_BYTES]
        body = sealed[HEADER_BYTES:]
        for key in (self.current, self.previous):
            if key is not None and key.key_id == key_id:
                try:
                    return key.cipher.decrypt(nonce, body, _associated(scope_key, name)).decode("utf-8")
                except (InvalidTag, UnicodeDecodeError):
                    raise SecretUnreadable(f"{where} was altered, or sealed for another place") from None
        raise SecretUnreadable(f"{where} is sealed under a key this server does not hold")


class SecretStore:
    """Sealed values under a scope and a name, in the ledger's secret rows."""

    def __init__(self, ledger: Ledger, sealer: SecretSealer) -> None:
        self.ledger = ledger
        self.sealer = sealer

    async def keep(self, scope: Scope, name: str, value: str, *, show_end: bool = True) -> str | None:
        """Seal and keep `value`; returns the `ends_with` kept beside it (None without `show_end`)."""
        ends_with = ends_with_of(value) if show_end else None
        await self.ledger.secrets.put(scope, name, self.sealer.seal(scope.key, name, value), ends_with)
        return ends_with

    async def read(self, scope: Scope, name: str) -> str | None:
        """The value in clear, None when nothing is kept; raises `SecretUnreadable`."""
        row = await self.ledger.secrets.get(scope, name)
        return None if row is None else self.sealer.open(row.scope_key, row.name, row.sealed)

    async def forget(self, scope: Scope, name: str) -> None:
        await self.ledger.secrets.forget(scope, name)

    async def reseal(self) -> int:
        """Seal again under the current key every row sealed under the previous one; how many were.

        A row no key opens is left as it is (the connection that needs it will be recorded broken)."""
        if self.sealer.previous is None:
            return 0
        count = 0
        for row in await self.ledger.secrets.every():
            if self.sealer.sealed_under_current(row.sealed):
                continue
            try:
                value = self.sealer.open(row.scope_key, row.name, row.sealed)
            except SecretUnreadable as unreadable:
                log.warning("secrets: %s; it is left as it is", unreadable)
                continue
            if await self.ledger.secrets.replace(row, self.sealer.seal(row.scope_key, row.name, value)):
                count += 1
        log.info("secrets: %d sealed again under SECRETS_KEY", count)
        return count
