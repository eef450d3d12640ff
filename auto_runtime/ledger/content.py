"""Content by digest: the port large content (tool results, datasets, model files) goes through.

Content is kept per scope (an org's or a playbook's key) under the lower-case hex SHA-256 of its
bytes; putting the same bytes again changes nothing. The ledger's own stores keep it in the ledger's
database, in chunks of at most `CHUNK_SIZE` bytes, with a `location` column saying where the bytes
are (`ledger` for now), so a later S3 store (`CONTENT_STORE_URL`) can implement this same port
without moving what is already kept.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final, Protocol

CHUNK_SIZE: Final = 1024 * 1024
LOCATION_LEDGER: Final = "ledger"
_DIGEST = re.compile(r"[0-9a-f]{64}")


class ContentStore(Protocol):
    """Where content's bytes live. Both methods are called from Trio tasks."""

    async def put(self, scope_key: str, data: bytes) -> str:
        """Keep `data` under its SHA-256 in the scope and return the hex digest (idempotent)."""
        ...

    async def get(self, scope_key: str, sha256: str) -> bytes | None:
        """The bytes kept under `sha256` in the scope, or None."""
        ...


def digest_of(data: bytes) -> str:
    """The lower-case hex SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def is_digest(text: str) -> bool:
    """Whether `text` is a lower-case hex SHA-256."""
    return isinstance(text, str) and _DIGEST.fullmatch(text) is not None


def chunks_of(data: bytes) -> list[bytes]:
    """`data` cut into chunks of at most `CHUNK_SIZE` bytes (one empty chunk for empty data)."""
    return [data[start : start + CHUNK_SIZE] for start in range(0, max(len(data), 1), CHUNK_SIZE)]
