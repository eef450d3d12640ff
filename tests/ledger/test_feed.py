"""The oldest-first global feed and the appended signal (every store)."""

from __future__ import annotations

import trio

from auto_runtime.ledger import Ledger, NewRecord, OrgScope, PlaybookScope, Record, StreamWrite

ACME = PlaybookScope("acme", "finance")


async def test_the_feed_reads_every_record_of_every_scope_once_in_order(ledger: Ledger) -> None:
    appended: list[Record] = []
    for number in range(25):
        scope = ACME if number % 2 else OrgScope("other")
        appended += await ledger.append([StreamWrite(scope.stream("s", str(number)), 0, [NewRecord("x", {})])])
    seen: list[Record] = []
    position = None
    while True:
        records, after = await ledger.read_forward(position, limit=7)
        if not records:
            assert after == position
            break
        seen += records
        position = after
    assert [r.id for r in seen] == [r.id for r in appended]
    more = await ledger.append([StreamWrite(ACME.stream("late"), 0, [NewRecord("x", {})])])
    assert (await ledger.read_forward(position, limit=7))[0] == more


async def test_a_follower_wakes_when_a_record_is_appended(ledger: Ledger) -> None:
    seen: list[Record] = []

    async def follow(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        position = None
        generation = ledger.appended.generation
        task_status.started()
        while len(seen) < 3:
            await ledger.appended.wait_beyond(generation)
            generation = ledger.appended.generation
            records, position = await ledger.read_forward(position)
            seen.extend(records)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(follow)
            for number in range(3):
                await ledger.append([StreamWrite(ACME.stream("s", str(number)), 0, [NewRecord("x", {})])])
    assert len(seen) == 3


async def test_appends_heard_wakes_for_this_process_appends_on_every_store(ledger: Ledger) -> None:
    """On PostgreSQL once the append's notification comes back; on SQLite it is the appended signal."""
    generation = ledger.appends_heard.generation
    await ledger.append([StreamWrite(ACME.stream("s", "1"), 0, [NewRecord("x", {})])])
    with trio.fail_after(30):
        await ledger.appends_heard.wait_beyond(generation)
