"""Partitions (issue 33): the balance among servers (a pure function), the placement of work, and one server's
partition leases on both stores: taken, renewed, handed over, and every write for a partition fenced by its epoch.

Lapses are judged by the database's clock: a test that needs a claim to lapse uses a short lapse and waits until
the store itself says the lease is free; renewals are driven by Trio's mock clock. No test asserts how long
anything took.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
import trio
import trio.testing

from auto_runtime.ledger import (
    ANY_VERSION,
    DueEntry,
    LeaseLost,
    Ledger,
    NewRecord,
    PlaybookScope,
    StreamWrite,
    compact_ranges,
    partition_lease_name,
    partition_of,
    partition_of_due,
    server_lease_name,
    uuid7,
)
from auto_runtime.workflow_host.partition_balance import plan_partitions, share_of
from auto_runtime.workflow_host.partition_leases import PartitionLeases

SWEEP = timedelta(seconds=1)
SCOPE = PlaybookScope("acme", "finance")


def test_a_run_and_a_playbook_have_the_same_partition_in_every_process_and_release() -> None:
    """A stable hash (MD5's first 32 bits), never Python's salted `hash()`: these values are pinned."""
    assert partition_of("0190a3b2-7c4d-7e8f-9a0b-1c2d3e4f5a6b", 64) == 8
    assert partition_of("acme/finance", 64) == 21
    assert partition_of("acme/finance", 7) == 1
    run_id = "0190A3B2-7C4D-7E8F-9A0B-1C2D3E4F5A6B"
    assert partition_of_due(SCOPE.key, run_id, 64) == 8  # a run id in either case names one run
    assert partition_of_due(SCOPE.key, "shadow", 64) == 21  # not a run: the playbook's partition
    assert partition_of_due("org/acme", "follow", 64) == partition_of("org/acme", 64)


def test_partitions_are_told_as_compact_ranges() -> None:
    assert compact_ranges(set()) == "none"
    assert compact_ranges({5}) == "5"
    assert compact_ranges({0, 1, 2, 3, 7, 9, 10}) == "0-3,7,9-10"
    assert compact_ranges(set(range(64))) == "0-63"


@pytest.mark.parametrize(
    ("servers", "partitions", "shares"),
    [
        (["a"], 64, [64]),
        (["a", "b"], 64, [32, 32]),
        (["a", "b", "c"], 64, [22, 21, 21]),
        (["c", "a", "b"], 10, [4, 3, 3]),
        (["a", "b", "c", "d", "e"], 3, [1, 1, 1, 0, 0]),
    ],
)
def test_each_server_aims_at_its_ceil_or_floor_share_and_the_shares_add_up(
    servers: list[str], partitions: int, shares: list[int]
) -> None:
    assert [share_of(s, servers, partitions) for s in sorted(servers)] == shares
    assert sum(shares) == partitions


def test_a_server_alone_takes_every_free_partition() -> None:
    plan = plan_partitions("a", 8, ["a"], {})
    assert (plan.keep, plan.take, plan.release, plan.share) == (frozenset(), frozenset(range(8)), frozenset(), 8)


def test_a_server_above_its_share_keeps_its_share_and_releases_the_rest() -> None:
    holders: dict[int, str | None] = dict.fromkeys(range(8), "a")
    plan = plan_partitions("a", 8, ["a", "b"], holders)
    assert (plan.keep, plan.take, plan.release) == (frozenset(range(4)), frozenset(), frozenset(range(4, 8)))


def test_a_server_below_its_share_takes_only_free_partitions_up_to_it() -> None:
    holders: dict[int, str | None] = {0: "a", 1: "a", 2: "a", 3: "b", 4: None, 5: "b", 6: None, 7: None}
    plan = plan_partitions("b", 8, ["a", "b"], holders)
    assert plan.keep == {3, 5}
    assert len(plan.take) == 2 and plan.take <= {4, 6, 7}
    assert plan.release == frozenset()
    # a server that sees every partition held below its share takes nothing: the others release at their sweep
    full: dict[int, str | None] = dict.fromkeys(range(8), "a")
    assert plan_partitions("b", 8, ["a", "b"], full).take == frozenset()


def test_servers_taking_at_once_start_at_different_places() -> None:
    takes = {plan_partitions(server, 64, [f"s{n}" for n in range(3)], {}).take for server in ("s0", "s1", "s2")}
    assert len(takes) == 3


async def test_a_server_alone_holds_every_partition_and_says_so_once(
    ledger: Ledger, caplog: pytest.LogCaptureFixture, mock_clock: trio.testing.MockClock
) -> None:
    caplog.set_level(logging.INFO, logger="auto_runtime.workflows")
    leases = PartitionLeases(ledger, "server-a", SWEEP)
    assert await leases.renew()
    count = ledger.partitioning.count
    assert leases.held() == frozenset(range(count)) and leases.holds_all()
    mock_clock.jump(SWEEP.total_seconds())
    assert await leases.renew()
    told = [r.getMessage() for r in caplog.records if r.getMessage().startswith("partitions held")]
    assert told == [f"partitions held: 0-{count - 1} ({count} of {count})"]
    assert [(s.server, s.partitions) for s in leases.servers] == [("server-a", count)]
    await leases.release_all()
    assert leases.held() == frozenset()
    assert all(row.holder is None for row in await ledger.leases.read_all("partition:"))
    assert await ledger.leases.read_all("server:") == []  # a clean stop deletes the server's own row


async def test_a_server_row_lapsed_for_longer_than_the_bound_is_deleted_and_no_other_row(ledger: Ledger) -> None:
    """A dead server's `server:` row goes once it lapsed for longer than the bound; a live server's row, a row
    lapsed for less, and partition rows stay (their fencing numbers must never start again)."""
    await ledger.lease(server_lease_name("ghost")).claim("ghost", timedelta(milliseconds=50))
    await ledger.lease(partition_lease_name(3)).claim("ghost", timedelta(milliseconds=50))
    live = PartitionLeases(ledger, "server-a", SWEEP)
    await live.renew()
    with trio.fail_after(30):  # until the database's clock says the ghost's claims lapsed
        while (await ledger.lease(server_lease_name("ghost")).holder()).holder is not None:  # noqa: ASYNC110
            await trio.sleep(0.01)
    assert await ledger.leases.forget_lapsed("server:", timedelta(hours=1)) == 0  # lapsed, but not for that long
    assert await ledger.leases.forget_lapsed("server:", timedelta(0)) == 1
    rows = await ledger.leases.read_all("server:")
    assert [row.name for row in rows] == [server_lease_name("server-a")]
    assert rows[0].holder == "server-a"
    assert partition_lease_name(3) in {row.name for row in await ledger.leases.read_all("partition:")}
    assert await ledger.lease(server_lease_name("ghost")).claim("ghost", timedelta(seconds=5))  # made again


async def test_a_second_server_gets_its_share_when_the_first_releases_its_surplus(
    ledger: Ledger, mock_clock: trio.testing.MockClock
) -> None:
    count = ledger.partitioning.count
    first = PartitionLeases(ledger, "server-a", SWEEP)
    second = PartitionLeases(ledger, "server-b", SWEEP)
    assert await first.renew()
    assert not await second.renew()  # alive now, but every partition is held: it waits for the first's surplus
    mock_clock.jump(SWEEP.total_seconds())
    await first.renew()  # sees the second alive: keeps its share and marks the rest
    await first.release_surplus()  # released at the sweep's end
    assert len(first.held()) == share_of("server-a", ["server-a", "server-b"], count)
    mock_clock.jump(SWEEP.total_seconds())
    assert await second.renew()
    assert len(second.held()) == share_of("server-b", ["server-a", "server-b"], count)
    assert first.held().isdisjoint(second.held()) and first.held() | second.held() == frozenset(range(count))
    assert sorted((s.server, s.partitions) for s in second.servers) == [
        ("server-a", len(first.held())),
        ("server-b", len(second.held())),
    ]
    await first.release_all()  # a clean stop: the second takes everything at its next look
    mock_clock.jump(SWEEP.total_seconds())
    await second.renew()
    assert second.holds_all()


async def test_a_server_that_lost_a_partition_cannot_write_for_it_even_a_moment_after(ledger: Ledger) -> None:
    """The old holder's fence (its epoch) fails every write for the partition once another server took it, on
    both stores, while its fences for the partitions it still holds keep working."""
    count = ledger.partitioning.count
    run_id = str(uuid7())
    partition = partition_of(run_id, count)
    other = next(p for p in range(count) if p != partition)
    lapsing = await ledger.lease(partition_lease_name(partition)).claim("server-a", timedelta(milliseconds=50))
    kept = await ledger.lease(partition_lease_name(other)).claim("server-a", timedelta(minutes=5))
    old, still = lapsing.fence(), kept.fence()
    with trio.fail_after(30):  # until the database's clock says the short claim lapsed
        while (await ledger.lease(partition_lease_name(partition)).holder()).holder is not None:  # noqa: ASYNC110
            await trio.sleep(0.01)
    taker = PartitionLeases(ledger, "server-b", SWEEP)
    assert await taker.renew()
    new = taker.fence_of(partition)
    assert new is not None and new.fencing == old.fencing + 1
    assert taker.fence_of(other) is None  # still the first server's
    stream = SCOPE.stream("runs", run_id)
    with pytest.raises(LeaseLost):
        await ledger.append([StreamWrite(stream, ANY_VERSION, [NewRecord("late", {})])], fence=old)
    with pytest.raises(LeaseLost):
        await ledger.due_work.arm([DueEntry(SCOPE, run_id, "late", lapsing.now)], fence=old)
    assert await ledger.stream_version(stream) == 0
    assert await ledger.due_work.entries_of_run(SCOPE, run_id) == []
    await ledger.append([StreamWrite(stream, ANY_VERSION, [NewRecord("by-the-taker", {})])], fence=new)
    other_stream = SCOPE.stream("runs", str(uuid7()))
    await ledger.append([StreamWrite(other_stream, ANY_VERSION, [NewRecord("still-held", {})])], fence=still)
    assert [r.type for r in await ledger.read_stream(stream)] == ["by-the-taker"]
