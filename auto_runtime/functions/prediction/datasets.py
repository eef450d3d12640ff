"""The playbook's datasets (prediction-format §4): uploaded by SHA-256, read once, kept as playbook content.

Each dataset is two pieces of content: its bytes under the playbook's scope, and its summary (the upload's
answer, JSON) under the scope key `<playbook scope>/datasets/<sha256>`, which holds nothing else. A dataset is
"uploaded to the playbook" when its summary is kept; the summary is written only after the bytes, so a summary
never names missing bytes. Nothing here is a record: an upload records no event.

An upload is spooled to a temporary file as it arrives (hashed on the way), then read line by line
(`dataset_csv`) in a worker thread or, when large, in a process of its own (`dataset_process`), at most
`READ_AT_ONCE` at once, so the event loop never waits for a reading; the content store keeps it from the file
a chunk at a time (`put_spooled`), so the server never holds the whole body. A body whose SHA-256 is not the
path's is refused before anything is kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Final

import trio
from cachetools import LRUCache

from auto_runtime.functions.prediction.dataset_csv import DatasetReading, read_dataset
from auto_runtime.functions.prediction.dataset_process import READ_AT_ONCE, read_spooled
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.ledger.content import open_spool
from auto_runtime.problems import InputIssue, Rejection, invalid_input

MAX_DATASET_BYTES: Final = 67_108_864
KEPT_READINGS: Final = 4


def summary_key(scope: PlaybookScope, dataset: str) -> str:
    return f"{scope.key}/datasets/{dataset}"


class Datasets:
    """Uploads and reads of datasets over one ledger. Every method is called from Trio tasks."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._readings: LRUCache[tuple[str, str], DatasetReading] = LRUCache(KEPT_READINGS)
        """The last `KEPT_READINGS` datasets read with their values (immutable: a dataset never changes)."""
        self._uploads_read = trio.CapacityLimiter(READ_AT_ONCE)
        """Bounds the uploads being read at once (`dataset_process`)."""

    async def summary(self, scope: PlaybookScope, dataset: str) -> dict[str, Any] | None:
        """The summary of a dataset uploaded to the playbook, or None."""
        key = summary_key(scope, dataset)
        digest = await self.ledger.queries.content.digest(key)
        if digest is None:
            return None
        data = await self.ledger.content.get(key, digest)
        if data is None:
            return None
        summary: dict[str, Any] = json.loads(data)
        return summary

    async def reading(self, scope: PlaybookScope, dataset: str) -> DatasetReading | None:
        """The dataset read again with its series' values, or None when the playbook lacks it."""
        key = (scope.key, dataset)
        kept = self._readings.get(key)
        if kept is not None:
            return kept
        if await self.summary(scope, dataset) is None:
            return None
        data = await self.ledger.content.get(scope.key, dataset)
        if data is None:
            return None
        reading = await trio.to_thread.run_sync(lambda: read_dataset(data.splitlines(keepends=True), keep_values=True))
        self._readings[key] = reading
        return reading

    async def upload(self, scope: PlaybookScope, dataset: str, body: AsyncIterator[bytes]) -> dict[str, Any]:
        """Spool, check the digest, read and keep: the summary, or `invalid_input` (see the module)."""
        async with open_spool() as spool:
            async for chunk in body:
                if spool.size + len(chunk) > MAX_DATASET_BYTES:
                    raise Rejection(
                        "content_too_large",
                        f"A dataset is at most {MAX_DATASET_BYTES:,} bytes.",
                        headers={"Connection": "close"},
                    )
                await spool.write(chunk)
            spooled = await spool.content()
            if spooled.sha256 != dataset:
                raise invalid_input(
                    [InputIssue(f"The body's SHA-256 is {spooled.sha256}, not the {dataset} the path names.", "/body")]
                )
            kept = await self.summary(scope, dataset)
            if kept is not None:
                return kept
            await spool.rewind()
            reading = await read_spooled(spool.file, spooled.size, self._uploads_read)
            if reading.errors:
                refusal = invalid_input(reading.errors)
                refusal.because = reading.because
                raise refusal
            summary = reading.summary(dataset, spooled.size)
            await self.ledger.content.put_spooled(scope.key, spooled)
        await self.ledger.content.put(summary_key(scope, dataset), json.dumps(summary).encode("utf-8"))
        return summary
