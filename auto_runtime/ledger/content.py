"""Content by digest: the port large content (workflow documents, later datasets and model files) goes through.

Content is kept per scope (an org's or a playbook's key) under the lower-case hex SHA-256 of its bytes, and is
immutable: putting the same bytes again changes nothing. Each store keeps one row per content in the ledger's
database (`ContentRows`), whose `location` says where its bytes are:

- `ledger`: in the ledger's database itself, in chunks of at most `CHUNK_SIZE` bytes;
- `s3://bucket/key`: in an object store (`CONTENT_STORE_URL`; see `object_content`).

`LedgerContent` is the `ContentStore` every ledger uses: it writes new content where the setting says (the
ledger, or the object store when one is given for writing) and reads each content where its row says, so
changing the setting moves nothing. Its rules:

- A row is written only after its bytes are kept: a put whose object store write failed leaves no row, so no
  row ever points at missing bytes (an object without a row is harmless, and the next put writes it again).
- What an object store answers is checked against the row's size and SHA-256 before anyone sees it
  (`ContentDamaged` otherwise).
- An object store that cannot be reached, or answers an error, raises `ContentUnavailable`, a
  `LedgerUnavailable`: the request that needed the content answers `unavailable` with `Retry-After`, and the
  append it was to precede is not made.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final, Protocol

import trio

from .errors import LedgerError, LedgerUnavailable

CHUNK_SIZE: Final = 1024 * 1024
HASHED_IN_PLACE: Final = 64 * 1024
"""Content up to this size is hashed on the calling thread; larger content in a worker thread."""
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


@dataclass(frozen=True, slots=True)
class KeptContent:
    """One content row: where its bytes are, how many there are, and the bytes when the ledger keeps them."""

    location: str
    size: int
    data: bytes | None
    """The bytes, when `location` is `ledger` (read in the same transaction as the row); else None."""


class ContentRows(Protocol):
    """The ledger's content table (`ledger_content`, with `ledger_content_chunks` for bytes kept in it)."""

    async def find(self, scope_key: str, sha256: str) -> KeptContent | None:
        """The row of `sha256` in the scope, or None."""
        ...

    async def keep_in_ledger(self, scope_key: str, sha256: str, data: bytes) -> None:
        """Keep the row and the bytes in the ledger's database, unless the scope holds `sha256` already."""
        ...

    async def keep_elsewhere(self, scope_key: str, sha256: str, size: int, location: str) -> None:
        """Keep a row saying the bytes are at `location`, unless the scope holds `sha256` already."""
        ...


class ContentObjects(Protocol):
    """Content's bytes in an object store (`object_content.S3ContentObjects`). Called from Trio tasks."""

    @property
    def writes(self) -> bool:
        """Whether new content goes to this store (`CONTENT_STORE_URL` is set); it reads either way."""
        ...

    def holds(self, location: str) -> bool:
        """Whether `location` is of this store's kind (`s3://...`)."""
        ...

    async def put(self, scope_key: str, sha256: str, data: bytes) -> str:
        """Write the bytes (idempotent: the key is derived from the scope and the digest); their location.
        Raises `ContentUnavailable` when the store cannot take them now."""
        ...

    async def get(self, location: str, size: int) -> bytes:
        """The object at `location`, read up to `size` + 1 bytes. Raises `ContentUnavailable` when the store
        cannot answer now, `ContentDamaged` when the object is missing."""
        ...


class ContentUnavailable(LedgerUnavailable):
    """The object store that keeps content cannot be reached now, or answered an error. Nothing was kept."""

    detail = (
        "The server cannot reach the object store that keeps its content at the moment. "
        "Send the same request again later."
    )

    def __init__(self, cause: str) -> None:
        LedgerError.__init__(self, f"the content store cannot serve now: {cause}")
        self.cause = cause


class ContentDamaged(LedgerError):
    """The bytes a content row points at are not the content it names: missing, another size or another SHA-256.
    Not a passing fault: no retry mends it."""

    def __init__(self, location: str, why: str) -> None:
        super().__init__(f"the content at {location} {why}")
        self.location = location


class LedgerContent:
    """The `ContentStore` of a ledger: its rows, and an object store for the content kept outside it (see the
    module for the rules). Without `objects`, content is kept in the ledger, and a row that points elsewhere
    cannot be read (`ContentUnavailable`, naming the missing object store)."""

    def __init__(self, rows: ContentRows, objects: ContentObjects | None = None) -> None:
        self.rows = rows
        self.objects = objects

    async def put(self, scope_key: str, data: bytes) -> str:
        digest = await hashed(data)
        if self.objects is None or not self.objects.writes:
            await self.rows.keep_in_ledger(scope_key, digest, data)
            return digest
        if await self.rows.find(scope_key, digest) is not None:
            return digest
        location = await self.objects.put(scope_key, digest, data)
        await self.rows.keep_elsewhere(scope_key, digest, len(data), location)
        return digest

    async def get(self, scope_key: str, sha256: str) -> bytes | None:
        kept = await self.rows.find(scope_key, sha256)
        if kept is None:
            return None
        if kept.data is not None:
            return kept.data
        if self.objects is None or not self.objects.holds(kept.location):
            raise ContentUnavailable(f"the content at {kept.location} needs an object store this server has not")
        data = await self.objects.get(kept.location, kept.size)
        if len(data) != kept.size:
            raise ContentDamaged(kept.location, f"holds {len(data)} bytes or more, not the {kept.size} kept")
        if await hashed(data) != sha256:
            raise ContentDamaged(kept.location, f"does not have the SHA-256 {sha256}")
        return data


def digest_of(data: bytes) -> str:
    """The lower-case hex SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()


async def hashed(data: bytes) -> str:
    """`digest_of(data)`, in a worker thread for content larger than `HASHED_IN_PLACE` (hashlib lets go of the
    GIL), so hashing megabytes never holds up the Trio thread."""
    if len(data) <= HASHED_IN_PLACE:
        return digest_of(data)
    return await trio.to_thread.run_sync(digest_of, data)


def is_digest(text: str) -> bool:
    """Whether `text` is a lower-case hex SHA-256."""
    return isinstance(text, str) and _DIGEST.fullmatch(text) is not None


def chunks_of(data: bytes) -> list[bytes]:
    """`data` cut into chunks of at most `CHUNK_SIZE` bytes (one empty chunk for empty data)."""
    return [data[start : start + CHUNK_SIZE] for start in range(0, max(len(data), 1), CHUNK_SIZE)]
