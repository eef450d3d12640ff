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

Large uploads (datasets, model candidates) are never held whole: the route writes the body to a `Spool` (a
temporary file, hashed and counted on the way), and `put_spooled` keeps it from there one `CHUNK_SIZE` chunk at a
time, into the ledger's chunk rows or as one streamed object-store request. The chunks are hashed again as they
are kept; bytes that are not the spool's size and SHA-256 raise `ContentMismatch` and keep nothing (the ledger's
transaction is rolled back; S3 refuses a body that does not match the SHA-256 the request was signed with).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import IO, Final, Protocol

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

    async def put_spooled(self, scope_key: str, spooled: SpooledContent) -> str:
        """Keep the spooled bytes under their SHA-256 in the scope, a chunk at a time; the hex digest
        (idempotent). Raises `ContentMismatch`, keeping nothing, when the file is not the spool's size and digest."""
        ...

    async def get(self, scope_key: str, sha256: str) -> bytes | None:
        """The bytes kept under `sha256` in the scope, or None."""
        ...

    async def discard(self, scope_key: str) -> None:
        """Forget every content of a scope that holds content only for a while (a build's staged candidates)."""
        ...


@dataclass(frozen=True, slots=True)
class SpooledContent:
    """Bytes waiting in a file to be kept: the file's descriptor, and the size and SHA-256 counted as it was
    written. Chunks are read with `os.pread`, which moves no shared position, so any thread may read any chunk."""

    fd: int
    size: int
    sha256: str

    @property
    def chunk_count(self) -> int:
        """How many `CHUNK_SIZE` chunks the bytes make (one empty chunk for no bytes, as `chunks_of`)."""
        return max(1, -(-self.size // CHUNK_SIZE))

    def chunk(self, number: int) -> bytes:
        """Chunk `number` (from 0) as the file holds it now. Blocking: call from a worker thread."""
        return os.pread(self.fd, CHUNK_SIZE, number * CHUNK_SIZE)

    def checked_chunks(self) -> Iterator[bytes]:
        """Every chunk in order; once the last is taken, `ContentMismatch` unless they made the spool's bytes."""
        check = ChunkCheck(self)
        for number in range(self.chunk_count):
            yield check.add(self.chunk(number))
        check.finish()


class ChunkCheck:
    """Hashes and counts the chunks of a `SpooledContent` as they are kept; `finish` compares with the spool."""

    def __init__(self, spooled: SpooledContent) -> None:
        self._spooled = spooled
        self._digest = hashlib.sha256()
        self._size = 0

    def add(self, chunk: bytes) -> bytes:
        self._digest.update(chunk)
        self._size += len(chunk)
        return chunk

    def finish(self) -> None:
        spooled = self._spooled
        found = self._digest.hexdigest()
        if self._size != spooled.size or found != spooled.sha256:
            raise ContentMismatch(
                f"the spooled content is {self._size} bytes of SHA-256 {found}, "
                f"not the {spooled.size} bytes of SHA-256 {spooled.sha256} that were written"
            )


class Spool:
    """A temporary file an upload is written to as it arrives, counting and hashing it (see the module).
    Use `open_spool`; `content` describes what was written, for `ContentStore.put_spooled`."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self._async_file = trio.wrap_file(file)
        self._digest = hashlib.sha256()
        self.size = 0

    async def write(self, chunk: bytes) -> None:
        """Append `chunk` (the file's writes run in a worker thread)."""
        self._digest.update(chunk)
        self.size += len(chunk)
        await self._async_file.write(chunk)

    async def content(self) -> SpooledContent:
        """What was written, flushed to the file."""
        await self._async_file.flush()
        return SpooledContent(self.file.fileno(), self.size, self._digest.hexdigest())

    async def rewind(self) -> None:
        """Flush and go back to the start, for a reader of `file`."""
        await self._async_file.flush()
        await self._async_file.seek(0)


@asynccontextmanager
async def open_spool() -> AsyncIterator[Spool]:
    """A `Spool` on an anonymous temporary file, closed (and so removed) on leaving."""
    file = await trio.to_thread.run_sync(tempfile.TemporaryFile)
    try:
        yield Spool(file)
    finally:
        file.close()


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

    async def keep_spooled_in_ledger(self, scope_key: str, spooled: SpooledContent) -> None:
        """`keep_in_ledger` of spooled bytes, read one chunk at a time within the row's transaction; rolled back
        on `ContentMismatch`."""
        ...

    async def keep_elsewhere(self, scope_key: str, sha256: str, size: int, location: str) -> None:
        """Keep a row saying the bytes are at `location`, unless the scope holds `sha256` already."""
        ...

    async def drop_scope(self, scope_key: str) -> list[str]:
        """Delete every row of the scope, with the chunks the ledger keeps; the locations of the other rows."""
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

    async def discard(self, location: str) -> None:
        """Delete the object at `location` (one already gone is no error); `ContentUnavailable` on failure."""
        ...

    async def put_spooled(self, scope_key: str, spooled: SpooledContent) -> str:
        """`put` of spooled bytes, sent as one streamed request a chunk at a time."""
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


class ContentMismatch(LedgerError):
    """Spooled bytes were not the size and SHA-256 counted when they were written (the file changed under the
    store). Nothing was kept."""


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

    async def put_spooled(self, scope_key: str, spooled: SpooledContent) -> str:
        if self.objects is None or not self.objects.writes:
            await self.rows.keep_spooled_in_ledger(scope_key, spooled)
            return spooled.sha256
        if await self.rows.find(scope_key, spooled.sha256) is not None:
            return spooled.sha256
        location = await self.objects.put_spooled(scope_key, spooled)
        await self.rows.keep_elsewhere(scope_key, spooled.sha256, spooled.size, location)
        return spooled.sha256

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

    async def discard(self, scope_key: str) -> None:
        """The rows go first, then their objects, so no row ever names a missing object; an object whose delete
        failed stays behind without a row (harmless, as after a failed put; the object store's log says why)."""
        for location in await self.rows.drop_scope(scope_key):
            if self.objects is not None and self.objects.holds(location):
                try:
                    await self.objects.discard(location)
                except ContentUnavailable:
                    continue


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
