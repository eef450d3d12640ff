"""Spooled content (`Spool`, `ContentStore.put_spooled`): an upload of several MiB is kept from its file a chunk
at a time, on both stores, in the ledger's chunk rows and in an object store (a local S3 emulator), without the
server ever holding it whole; and bytes that are not the spool's size and SHA-256 keep nothing.

"Never whole" is measured: `tracemalloc` traces every Python allocation of every thread (the SQLite writer, the
PostgreSQL loop, the worker threads reading chunks, httpx's sending), and the peak while the content is kept
must stay under half its size.
"""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from collections.abc import Iterator

import pytest

from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.ledger.content import CHUNK_SIZE, ContentMismatch, SpooledContent, open_spool
from tests.fakes.s3_emulator import S3Emulator, start_s3_emulator

from .conftest import Target
from .test_object_content import PREFIX, chunks_of, ledger_of, objects_of, row_of

ACME = PlaybookScope("acme", "finance")
SIZE = 12 * CHUNK_SIZE + 1234


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Emulator]:
    started = start_s3_emulator(tmp_path_factory.mktemp("s3"))
    yield started
    started.stop()


def upload() -> Iterator[bytes]:
    """A body of `SIZE` random bytes, as an HTTP server hands it over: 64 KiB at a time."""
    left = SIZE
    while left:
        piece = os.urandom(min(left, 64 * 1024))
        left -= len(piece)
        yield piece


async def kept_spooled(ledger: Ledger) -> tuple[str, int]:
    """Spool an upload, keep it, and return its digest and the peak of traced memory while it was kept."""
    async with open_spool() as spool:
        digest = hashlib.sha256()
        for piece in upload():
            digest.update(piece)
            await spool.write(piece)
        spooled = await spool.content()
        assert (spooled.size, spooled.sha256) == (SIZE, digest.hexdigest())
        tracemalloc.start()
        try:
            assert await ledger.content.put_spooled(ACME.key, spooled) == spooled.sha256
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return spooled.sha256, peak


async def read_back(ledger: Ledger, digest: str) -> None:
    data = await ledger.get_content(ACME, digest)
    assert data is not None and len(data) == SIZE and hashlib.sha256(data).hexdigest() == digest


async def test_a_spooled_upload_is_kept_in_chunk_rows_never_whole(target: Target) -> None:
    async with target.open() as ledger:
        digest, peak = await kept_spooled(ledger)
        assert peak < SIZE // 2
        assert await row_of(ledger, digest) == [{"location": "ledger", "size": SIZE}]
        assert await chunks_of(ledger, digest) == 13
        await read_back(ledger, digest)


async def test_a_spooled_upload_is_streamed_to_the_bucket_never_whole(target: Target, emulator: S3Emulator) -> None:
    bucket = emulator.new_bucket()
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        digest, peak = await kept_spooled(ledger)
        assert peak < SIZE // 2
        key = f"{PREFIX}/playbook/acme/finance/{digest}"
        assert await row_of(ledger, digest) == [{"location": f"s3://{bucket}/{key}", "size": SIZE}]
        assert await chunks_of(ledger, digest) == 0
        assert list(emulator.objects(bucket)) == [key]
        await read_back(ledger, digest)


async def test_spooled_bytes_that_changed_keep_nothing_in_the_ledger(target: Target) -> None:
    async with target.open() as ledger, open_spool() as spool:
        await spool.write(b"x" * (2 * CHUNK_SIZE + 5))
        spooled = await spool.content()
        changed = SpooledContent(spooled.fd, spooled.size, hashlib.sha256(b"other bytes").hexdigest())
        with pytest.raises(ContentMismatch):
            await ledger.content.put_spooled(ACME.key, changed)
        assert await row_of(ledger, changed.sha256) == []
        assert await chunks_of(ledger, changed.sha256) == 0
        shorter = SpooledContent(spooled.fd, spooled.size - 1, spooled.sha256)
        with pytest.raises(ContentMismatch):
            await ledger.content.put_spooled(ACME.key, shorter)
        assert await row_of(ledger, spooled.sha256) == []


async def test_spooled_bytes_that_changed_keep_nothing_in_the_bucket(target: Target, emulator: S3Emulator) -> None:
    bucket = emulator.new_bucket()
    async with (
        objects_of(emulator, bucket) as objects,
        ledger_of(target, objects) as ledger,
        open_spool() as spool,
    ):
        await spool.write(b"y" * (CHUNK_SIZE + 9))
        spooled = await spool.content()
        changed = SpooledContent(spooled.fd, spooled.size, hashlib.sha256(b"other bytes").hexdigest())
        with pytest.raises(ContentMismatch):
            await ledger.content.put_spooled(ACME.key, changed)
        assert await row_of(ledger, changed.sha256) == []
    assert emulator.objects(bucket) == {}


async def test_discarding_a_scope_forgets_its_rows_chunks_and_objects_and_nothing_else(
    target: Target, emulator: S3Emulator
) -> None:
    bucket = emulator.new_bucket()
    staged = PlaybookScope("acme", "finance").key + "/builds/run-1/candidates"
    async with ledger_of(target, None) as ledger:
        in_ledger = await ledger.content.put(staged, b"x" * (CHUNK_SIZE + 1))
        kept = await ledger.put_content(ACME, b"the winner")
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        in_bucket = await ledger.content.put(staged, b"a staged candidate")
        assert len(emulator.objects(bucket)) == 1
        await ledger.content.discard(staged)
        assert await ledger.content.get(staged, in_ledger) is None
        assert await ledger.content.get(staged, in_bucket) is None
        assert await chunks_of(ledger, in_ledger) == 0
        assert emulator.objects(bucket) == {}
        assert await ledger.get_content(ACME, kept) == b"the winner"
        await ledger.content.discard(staged)
