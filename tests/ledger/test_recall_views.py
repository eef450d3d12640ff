"""The `recall_views` table on both stores (`ledger/recall_views.py`): a row made and reset unconditionally, a
write conditional on the version and checkpoint it was read at (`NULL` equal to `NULL`), a drop, and every write
refused once the writer's lease fence no longer holds."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from auto_runtime.ledger import LeaseLost, Ledger
from auto_runtime.ledger.recall_views import Expected, ViewRow

LONG = timedelta(seconds=60)
ROW = ViewRow(
    org="acme",
    playbook="finance",
    name="late-shipments",
    version=1,
    saved_at="2026-10-02T07:30:00.000Z",
    state="rebuilding",
    view="[]",
    checkpoint=None,
    checkpoint_at=None,
    last_event=None,
    folded=0,
    tries=0,
    stalled=None,
)


async def test_a_row_advances_only_from_the_version_and_checkpoint_it_was_read_at(ledger: Ledger) -> None:
    fence = (await ledger.lease("recall-test").claim("host-a", LONG)).fence()
    rows = ledger.recall_views
    await rows.put(ROW, fence)
    assert await rows.one("acme", "finance", "late-shipments") == ROW
    moved = replace(ROW, view="[1]", checkpoint="7.7", checkpoint_at="2026-10-02T07:31:00.000Z", folded=1)
    assert await rows.advance(moved, Expected(1, None), fence)
    assert await rows.one("acme", "finance", "late-shipments") == moved
    again = replace(moved, view="[1,1]", folded=2)
    assert not await rows.advance(again, Expected(1, None), fence)
    assert not await rows.advance(again, Expected(2, "7.7"), fence)
    assert await rows.one("acme", "finance", "late-shipments") == moved
    reset = replace(ROW, version=2)
    await rows.put(reset, fence)
    assert not await rows.advance(again, Expected(1, "7.7"), fence)
    assert await rows.of_playbook("acme", "finance") == [reset]
    await rows.drop("acme", "finance", "late-shipments", fence)
    assert await rows.one("acme", "finance", "late-shipments") is None


async def test_a_writer_that_lost_the_lease_writes_nothing(ledger: Ledger) -> None:
    lease = ledger.lease("recall-test")
    old = (await lease.claim("host-a", timedelta(milliseconds=1))).fence()
    await ledger.recall_views.put(ROW, old)
    taken = await lease.claim("host-b", LONG)
    while taken.holder != "host-b":
        taken = await lease.claim("host-b", LONG)
    with pytest.raises(LeaseLost):
        await ledger.recall_views.advance(replace(ROW, folded=5), Expected(1, None), old)
    with pytest.raises(LeaseLost):
        await ledger.recall_views.drop("acme", "finance", "late-shipments", old)
    assert await ledger.recall_views.one("acme", "finance", "late-shipments") == ROW
