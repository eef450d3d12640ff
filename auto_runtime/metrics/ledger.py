"""The ledger's writer: each commit's batch size and duration, by store; reads that waited for a connection (the
SQLite store's readers, the PostgreSQL store's pool, which its other statements than appends share).

`commit` is a context manager around one batch's transaction, entered in the writer's thread (SQLite) or on
its loop (PostgreSQL). A batch that raised out of it is not recorded; the SQLite writer answers a failed
transaction's appends with their errors rather than raising, so its failed batches count too (they are rare:
a full disk, a broken statement)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from auto_runtime.metrics.state import METERING

STORE = "auto_runtime.ledger.store"


@contextmanager
def commit(store: str, size: int) -> Iterator[None]:
    if not METERING.on:
        yield
        return
    started = time.perf_counter()
    yield
    instruments = METERING.instruments
    attributes = {STORE: store}
    instruments.commit_duration.record(time.perf_counter() - started, attributes)
    instruments.commit_batch.record(size, attributes)


def reader_waits(store: str, free_readers: float) -> None:
    """A read is about to take a connection of the store's pool: it waits when none is free."""
    if METERING.on and free_readers < 1:
        METERING.instruments.reader_waits.add(1, {STORE: store})
