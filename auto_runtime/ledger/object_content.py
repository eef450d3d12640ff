"""Content on object storage (`CONTENT_STORE_URL=s3://bucket/prefix`): the `ContentObjects` of `content`.

New content is written to `<prefix>/<scope key>/<sha256>` in the bucket (`<scope key>/<sha256>` without a
prefix), and its row's location is `s3://bucket/<key>`. Content is immutable and addressed by its digest, so
writing a key again writes the same bytes. A row names its bucket and key in full, so content stays readable
where it was written after `CONTENT_STORE_URL` changes or is unset: this store reads any `s3://` location
with the server's AWS settings (`AWS_REGION`, `AWS_ENDPOINT_URL`, the default credential chain).

Staging (a prediction build's candidates, kept until the build ends): `stage` writes under
`<prefix>/staging/<scope key>/<name>`, `promote` copies a staged object to its content key within S3 and
deletes the staged one, `discard` deletes it.

Failures: whatever S3 did not carry out is `ContentUnavailable` (the request answers `unavailable` with
`Retry-After`), except an object a content row names that S3 says is not there, which is `ContentDamaged`.
The operator's log gets one warning when the store starts failing, with the cause, and one line when it
answers again (not one per request).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Final

import trio

from .content import ChunkCheck, ContentDamaged, ContentUnavailable, SpooledContent
from .s3_requests import S3Failure, S3Requests

log = logging.getLogger("auto_runtime.ledger")

SCHEME: Final = "s3://"
STAGING: Final = "staging"
_NAME = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class S3ContentObjects:
    """Content's bytes in S3. `bucket` and `prefix` are `CONTENT_STORE_URL`'s (`prefix` without a leading or
    trailing `/`); without a bucket this store only reads what rows name."""

    def __init__(self, requests: S3Requests, bucket: str | None, prefix: str = "") -> None:
        self._requests = requests
        self._bucket_name = bucket
        self._prefix = prefix.strip("/")
        self._failing = False

    @property
    def writes(self) -> bool:
        return self._bucket_name is not None

    def holds(self, location: str) -> bool:
        return location.startswith(SCHEME)

    def key_of(self, scope_key: str, sha256: str) -> str:
        """The key new content of the scope is written under."""
        return self._under(f"{scope_key}/{sha256}")

    async def put(self, scope_key: str, sha256: str, data: bytes) -> str:
        bucket = self._bucket()
        key = self.key_of(scope_key, sha256)
        location = f"{SCHEME}{bucket}/{key}"
        try:
            await self._requests.put_object(bucket, key, data, sha256)
        except S3Failure as failure:
            raise self._unavailable(failure) from None
        self._answered()
        return location

    async def put_spooled(self, scope_key: str, spooled: SpooledContent) -> str:
        bucket = self._bucket()
        key = self.key_of(scope_key, spooled.sha256)
        try:
            await self._requests.put_object_streamed(bucket, key, _read(spooled), spooled.size, spooled.sha256)
        except S3Failure as failure:
            raise self._unavailable(failure) from None
        self._answered()
        return f"{SCHEME}{bucket}/{key}"

    async def get(self, location: str, size: int) -> bytes:
        bucket, key = split_location(location)
        try:
            data = await self._requests.get_object(bucket, key, size + 1)
        except S3Failure as failure:
            if failure.missing:
                self._answered()
                raise ContentDamaged(location, f"is not in the object store ({failure.cause})") from None
            raise self._unavailable(failure) from None
        self._answered()
        return data

    async def stage(self, scope_key: str, name: str, data: bytes, sha256: str) -> str:
        """Write a staged object `name` of the scope (`sha256`: the hex SHA-256 of `data`); its location."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"a staged object's name is 1 to 128 of A-Z a-z 0-9 . _ : -, not {name!r}")
        bucket = self._bucket()
        key = self._under(f"{STAGING}/{scope_key}/{name}")
        try:
            await self._requests.put_object(bucket, key, data, sha256)
        except S3Failure as failure:
            raise self._unavailable(failure) from None
        self._answered()
        return f"{SCHEME}{bucket}/{key}"

    async def promote(self, staged: str, scope_key: str, sha256: str) -> str:
        """Copy a staged object (its `sha256` as staged) to the scope's content key, then delete the staged one;
        the content's location, for its row. Promoting again after a failure is safe."""
        bucket, staged_key = split_location(staged)
        key = self.key_of(scope_key, sha256)
        try:
            await self._requests.copy_object(bucket, staged_key, key)
            await self._requests.delete_object(bucket, staged_key)
        except S3Failure as failure:
            raise self._unavailable(failure) from None
        self._answered()
        return f"{SCHEME}{bucket}/{key}"

    async def discard(self, staged: str) -> None:
        """Delete a staged object (one already gone is no error)."""
        bucket, key = split_location(staged)
        try:
            await self._requests.delete_object(bucket, key)
        except S3Failure as failure:
            raise self._unavailable(failure) from None
        self._answered()

    def _bucket(self) -> str:
        if self._bucket_name is None:
            raise RuntimeError("CONTENT_STORE_URL is not set: this store only reads")
        return self._bucket_name

    def _under(self, key: str) -> str:
        return f"{self._prefix}/{key}" if self._prefix else key

    def _unavailable(self, failure: S3Failure) -> ContentUnavailable:
        if not self._failing:
            self._failing = True
            log.warning("the object store cannot serve content (%s); what needs it answers unavailable", failure)
        return ContentUnavailable(failure.cause)

    def _answered(self) -> None:
        if self._failing:
            self._failing = False
            log.info("the object store serves content again")


async def _read(spooled: SpooledContent) -> AsyncIterator[bytes]:
    """The spool's chunks, each read in a worker thread. The last is held back until all are checked: bytes that
    are not the spool's raise `ContentMismatch` before the body is complete, so no store keeps an object of them
    (S3 would also refuse them for the signed SHA-256; an emulator may not)."""
    check = ChunkCheck(spooled)
    held: bytes | None = None
    for number in range(spooled.chunk_count):
        chunk = check.add(await trio.to_thread.run_sync(spooled.chunk, number))
        if held is not None:
            yield held
        held = chunk
    check.finish()
    if held is not None:
        yield held


def split_location(location: str) -> tuple[str, str]:
    """The bucket and key of an `s3://bucket/key` location."""
    bucket, _, key = location.removeprefix(SCHEME).partition("/")
    if not location.startswith(SCHEME) or not bucket or not key:
        raise ValueError(f"not an s3://bucket/key location: {location!r}")
    return bucket, key
