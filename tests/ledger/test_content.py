"""Content by digest, kept in the ledger's database (every store)."""

from __future__ import annotations

import hashlib
import os

import trio

from auto_runtime.ledger import Ledger, OrgScope, PlaybookScope
from tests.stored_rows import stored_rows

ACME = PlaybookScope("acme", "finance")


async def test_content_round_trips_under_its_sha256(ledger: Ledger) -> None:
    data = b"tool result \x00\xff"
    digest = await ledger.put_content(ACME, data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert await ledger.get_content(ACME, digest) == data


async def test_content_larger_than_a_chunk_and_empty_content_round_trip(ledger: Ledger) -> None:
    large = os.urandom(2 * 1024 * 1024 + 123)
    assert await ledger.get_content(ACME, await ledger.put_content(ACME, large)) == large
    assert await ledger.get_content(ACME, await ledger.put_content(ACME, b"")) == b""


async def test_putting_the_same_content_again_changes_nothing(ledger: Ledger) -> None:
    data = os.urandom(4096)
    digests: list[str] = []

    async def put() -> None:
        digests.append(await ledger.put_content(ACME, data))

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(put)
    assert len(set(digests)) == 1
    assert await ledger.get_content(ACME, digests[0]) == data
    rows = await stored_rows(ledger, "SELECT count(*) AS n FROM ledger_content_chunks WHERE sha256 = ?", [digests[0]])
    assert rows == [{"n": 1}]


async def test_content_is_kept_per_scope(ledger: Ledger) -> None:
    digest = await ledger.put_content(ACME, b"secret")
    assert await ledger.get_content(PlaybookScope("acme", "sales"), digest) is None
    assert await ledger.get_content(OrgScope("acme"), digest) is None
    assert await ledger.get_content(PlaybookScope("other", "finance"), digest) is None


async def test_unknown_and_malformed_digests_find_nothing(ledger: Ledger) -> None:
    assert await ledger.get_content(ACME, "0" * 64) is None
    assert await ledger.get_content(ACME, "../etc/passwd") is None
    assert await ledger.get_content(ACME, "A" * 64) is None
