"""The workflow lease on both stores: claim, renew, lapse, take-over, release, fencing, racing claimers.

Lapses are judged by the store's clock (the database's on PostgreSQL). A test that needs a claim to
lapse uses a short lapse and waits until the store itself says the lease is free; no test asserts
how long anything took.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import trio

from auto_runtime.ledger import (
    WORKFLOW_HOST_LEASE,
    DueEntry,
    DueKey,
    DueWorkChanges,
    Lease,
    LeaseFence,
    LeaseLost,
    Ledger,
    NewRecord,
    PlaybookScope,
    StreamWrite,
    workflow_lease_lapse,
)

from .conftest import Target

LONG = timedelta(seconds=60)
SHORT = timedelta(milliseconds=50)
ACME = PlaybookScope("acme", "finance")


async def wait_until_lapsed(lease: Lease) -> None:
    """Wait until the store's clock says the lease has no live holder."""
    with trio.fail_after(30):
        while True:
            if (await lease.holder()).holder is None:
                return
            await trio.sleep(0.01)


async def test_a_lease_never_claimed_is_free_with_fencing_zero(ledger: Ledger) -> None:
    state = await ledger.lease().holder()
    assert state.name == WORKFLOW_HOST_LEASE
    assert (state.holder, state.until, state.fencing) == (None, None, 0)
    assert state.remaining == timedelta(0)
    with pytest.raises(ValueError, match="no live holder"):
        state.fence()


async def test_the_first_claim_takes_the_lease_and_renewals_keep_the_fencing_number(ledger: Ledger) -> None:
    lease = ledger.lease()
    first = await lease.claim("host-a", LONG)
    assert first.held_by("host-a")
    assert first.fencing == 1
    assert first.until is not None and first.until > first.now
    assert first.until - first.now == LONG
    renewed = await lease.claim("host-a", LONG)
    assert renewed.held_by("host-a")
    assert renewed.fencing == 1
    assert renewed.until is not None and renewed.until >= first.until
    seen = await lease.holder()
    assert (seen.holder, seen.until, seen.fencing) == ("host-a", renewed.until, 1)


async def test_a_standby_is_told_who_holds_a_live_lease_and_changes_nothing(ledger: Ledger) -> None:
    lease = ledger.lease()
    held = await lease.claim("host-a", LONG)
    answer = await lease.claim("host-b", LONG)
    assert not answer.held_by("host-b")
    assert (answer.holder, answer.until, answer.fencing) == ("host-a", held.until, 1)
    assert (await lease.holder()).holder == "host-a"


async def test_a_standby_takes_a_lapsed_lease_and_the_old_holder_is_told(ledger: Ledger) -> None:
    lease = ledger.lease()
    await lease.claim("host-a", SHORT)
    await wait_until_lapsed(lease)
    lapsed = await lease.holder()
    assert (lapsed.holder, lapsed.until, lapsed.fencing) == (None, None, 1)

    taken = await lease.claim("host-b", LONG)
    assert taken.held_by("host-b")
    assert taken.fencing == 2
    # host-a was paused past its lapse: its next claim learns that host-b holds the lease.
    told = await lease.claim("host-a", LONG)
    assert not told.held_by("host-a")
    assert (told.holder, told.fencing) == ("host-b", 2)

    # host-b dies in turn: host-a takes the lease back, under a number that shows someone held it meanwhile.
    await lease.claim("host-b", SHORT)
    await wait_until_lapsed(lease)
    back = await lease.claim("host-a", LONG)
    assert back.held_by("host-a")
    assert back.fencing == 3


async def test_a_holder_that_lapsed_while_nobody_took_over_renews_with_the_same_number(ledger: Ledger) -> None:
    lease = ledger.lease()
    await lease.claim("host-a", SHORT)
    await wait_until_lapsed(lease)
    again = await lease.claim("host-a", LONG)
    assert again.held_by("host-a")
    assert again.fencing == 1


async def test_release_frees_the_lease_at_once_and_only_for_its_holder(ledger: Ledger) -> None:
    lease = ledger.lease()
    await lease.claim("host-a", LONG)
    assert await lease.release("host-b") is False
    assert (await lease.holder()).holder == "host-a"
    assert await lease.release("host-a") is True
    freed = await lease.holder()
    assert (freed.holder, freed.fencing) == (None, 1)
    assert await lease.release("host-a") is False

    taken = await lease.claim("host-b", LONG)
    assert taken.held_by("host-b") and taken.fencing == 2
    assert await lease.release("host-b") is True
    back = await lease.claim("host-a", LONG)
    assert back.held_by("host-a") and back.fencing == 3


async def test_leases_with_different_names_are_independent(ledger: Ledger) -> None:
    await ledger.lease("one").claim("host-a", LONG)
    other = await ledger.lease("two").claim("host-b", LONG)
    assert other.held_by("host-b") and other.fencing == 1
    assert (await ledger.lease("one").holder()).holder == "host-a"


async def test_a_lease_outlives_reopening_the_store(target: Target) -> None:
    async with target.open() as ledger:
        await ledger.lease().claim("host-a", LONG)
    async with target.open() as ledger:
        state = await ledger.lease().holder()
        assert (state.holder, state.fencing) == ("host-a", 1)
        assert not (await ledger.lease().claim("host-b", LONG)).held_by("host-b")


@pytest.mark.parametrize("lapsed_first", [False, True])
async def test_of_many_tasks_claiming_at_once_exactly_one_takes_the_lease(ledger: Ledger, lapsed_first: bool) -> None:
    lease = ledger.lease()
    if lapsed_first:
        await lease.claim("gone", SHORT)
        await wait_until_lapsed(lease)
    answers: dict[str, str | None] = {}

    async def claim(holder: str) -> None:
        answers[holder] = (await lease.claim(holder, LONG)).holder

    async with trio.open_nursery() as nursery:
        for number in range(24):
            nursery.start_soon(claim, f"host-{number}")
    winners = [holder for holder, answer in answers.items() if answer == holder]
    assert len(winners) == 1
    assert set(answers.values()) == {winners[0]}
    state = await lease.holder()
    assert state.holder == winners[0]
    assert state.fencing == (2 if lapsed_first else 1)


async def test_a_fenced_append_is_written_only_while_its_holder_keeps_the_lease(ledger: Ledger) -> None:
    lease = ledger.lease()
    fence = (await lease.claim("host-a", SHORT)).fence()
    stream = ACME.stream("runs", "r1")
    timer = DueEntry(ACME, "r1", "t1", (await lease.holder()).now, {"n": 1})
    await ledger.append([StreamWrite(stream, 0, [NewRecord("applied", {})])], fence=fence)
    await wait_until_lapsed(lease)
    # Lapsed, but nobody took it: no other holder could have acted, so the fence still holds.
    await ledger.append([StreamWrite(stream, 1, [NewRecord("applied", {})])], fence=fence)
    assert (await lease.claim("host-b", LONG)).held_by("host-b")

    with pytest.raises(LeaseLost) as lost:
        await ledger.append(
            [StreamWrite(stream, 2, [NewRecord("applied", {})])], due_work=DueWorkChanges(arm=[timer]), fence=fence
        )
    assert (lost.value.name, lost.value.holder, lost.value.fencing) == (WORKFLOW_HOST_LEASE, "host-a", 1)
    assert await ledger.stream_version(stream) == 2
    assert await ledger.due_work.entries_of_run(ACME, "r1") == []
    with pytest.raises(LeaseLost):
        await ledger.due_work.arm([timer], fence=fence)
    with pytest.raises(LeaseLost):
        await ledger.due_work.cancel([timer.due_key], fence=fence)
    assert await ledger.due_work.entries_of_run(ACME, "r1") == []

    current = (await lease.holder()).fence()
    await ledger.due_work.arm([timer], fence=current)
    with pytest.raises(LeaseLost):
        await ledger.due_work.mark_fired([timer.due_key], fence=fence)
    with pytest.raises(LeaseLost):
        await ledger.due_work.forget_run(ACME, "r1", fence=fence)
    assert [row.state for row in await ledger.due_work.entries_of_run(ACME, "r1")] == ["armed"]
    assert await ledger.due_work.mark_fired([DueKey(ACME, "r1", "t1")], fence=current) == 1


async def test_a_released_lease_fails_its_old_holders_fence(ledger: Ledger) -> None:
    lease = ledger.lease()
    fence = (await lease.claim("host-a", LONG)).fence()
    await lease.release("host-a")
    with pytest.raises(LeaseLost):
        await ledger.append([StreamWrite(ACME.stream("runs", "r1"), 0, [NewRecord("x", {})])], fence=fence)
    assert await ledger.stream_version(ACME.stream("runs", "r1")) == 0


async def test_claims_and_fences_refuse_malformed_arguments(ledger: Ledger) -> None:
    lease = ledger.lease()
    with pytest.raises(ValueError, match="lapse"):
        await lease.claim("host-a", timedelta(0))
    with pytest.raises(ValueError, match="holder"):
        await lease.claim("", LONG)
    with pytest.raises(ValueError, match="lease name"):
        ledger.lease("a/b")
    with pytest.raises(ValueError, match="fencing"):
        await ledger.due_work.arm([], fence=LeaseFence(WORKFLOW_HOST_LEASE, "host-a", 0))
    assert (await lease.holder()).fencing == 0


def test_the_workflow_lapse_is_the_longer_of_three_sweeps_and_three_seconds() -> None:
    assert workflow_lease_lapse(timedelta(milliseconds=10)) == timedelta(seconds=3)
    assert workflow_lease_lapse(timedelta(seconds=1)) == timedelta(seconds=3)
    assert workflow_lease_lapse(timedelta(seconds=2)) == timedelta(seconds=6)
    assert workflow_lease_lapse(timedelta(minutes=1)) == timedelta(minutes=3)
    with pytest.raises(ValueError, match="sweep"):
        workflow_lease_lapse(timedelta(0))


async def test_many_leases_are_claimed_read_and_released_in_one_call_each(ledger: Ledger) -> None:
    """Issue 33: a server claims its partitions' leases together (in name order, each by the rules of one claim),
    reads every row under a prefix at one `now`, and releases several at once."""
    await ledger.lease("p:1").claim("host-b", LONG)
    states = await ledger.leases.claim_many(["p:2", "p:1", "p:0", "p:2"], "host-a", LONG)
    assert [(s.name, s.holder, s.fencing) for s in states] == [
        ("p:0", "host-a", 1),
        ("p:1", "host-b", 1),
        ("p:2", "host-a", 1),
    ]
    rows = await ledger.leases.read_all("p:")
    assert [(r.name, r.holder) for r in rows] == [("p:0", "host-a"), ("p:1", "host-b"), ("p:2", "host-a")]
    assert len({r.now for r in rows}) == 1
    assert await ledger.leases.release_many(["p:0", "p:1", "p:2"], "host-a") == 2
    assert [r.holder for r in await ledger.leases.read_all("p:")] == [None, "host-b", None]
    again = await ledger.leases.claim_many(["p:0"], "host-c", LONG)
    assert (again[0].holder, again[0].fencing) == ("host-c", 2)  # taken from nobody after a release: a new epoch
    assert await ledger.leases.read_all("q:") == []
    assert await ledger.leases.claim_many([], "host-a", LONG) == []
    with pytest.raises(ValueError, match="prefix"):
        await ledger.leases.read_all("")
