"""`due_wake` (issue 33): the ledger itself wakes the partitions' holders. A write that arms work due soon in a
partition this server does not hold tells every server sharing the database (`Ledger.due_recorded`, through
`LISTEN/NOTIFY` once it committed); work in a held partition, work due past the horizon, an arm its own changes
cancel, and any write of a server that registered no partitions (it holds them all) tell nobody.

Two ledgers on one database are two servers. "Nothing was told" is judged by order, never by waiting a while: the
writing server then names a run begun (`tell_runs_begun`), whose notification follows any it sent before, and once
the other server heard that name it has heard everything sent before it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import trio

from auto_runtime.ledger import (
    DueEntry,
    DueWorkChanges,
    Ledger,
    NewRecord,
    PlaybookScope,
    StreamWrite,
    partition_of_due,
    uuid7,
)
from auto_runtime.ledger.due_wake import DueWake
from auto_runtime.ledger.due_work import encode_changes
from auto_runtime.ledger.partitions import Partitioning

from .conftest import Target

SCOPE = PlaybookScope("acme", "wake")
NOW = datetime(2030, 1, 1, tzinfo=UTC)
SWEEP = timedelta(minutes=1)


def run_in(ledger: Ledger, held: bool, holds: int) -> str:
    """A run id whose partition is `holds` (held) or another one (not held)."""
    while True:
        run_id = uuid7()
        if (partition_of_due(SCOPE.key, run_id, ledger.partitioning.count) == holds) == held:
            return run_id


async def heard_all(writer: Ledger, listener: Ledger) -> None:
    """Once this returns, `listener` heard every notification `writer` asked for before the call."""
    marker = uuid7()
    told = listener.runs_begun.watch(marker)
    await writer.tell_runs_begun([marker])
    with trio.fail_after(30):
        await told.wait()


def entry(run_id: str, due_at: datetime, key: str = "timer") -> DueEntry:
    return DueEntry(SCOPE, run_id, key, due_at, {"n": 1})


@pytest.mark.postgres
async def test_due_work_armed_soon_for_a_partition_held_elsewhere_wakes_the_other_servers(postgres_url: str) -> None:
    target = Target("postgres", None, postgres_url)
    async with target.open() as holder, target.open() as writer:
        held = 3
        await writer.due_work.arm([entry(run_in(writer, False, held), NOW)])  # no partitions told: holds them all
        await heard_all(writer, holder)
        before = holder.due_recorded.generation

        writer.due_wake.watch(lambda partition: partition == held, SWEEP, lambda: NOW)
        elsewhere = run_in(writer, False, held)
        await writer.due_work.arm([entry(run_in(writer, True, held), NOW)])  # held here: its own loop fires it
        await writer.due_work.arm([entry(elsewhere, NOW + SWEEP + timedelta(seconds=1))])  # read by a later sweep
        await writer.due_work.change(  # armed and cancelled at once: nothing comes due
            DueWorkChanges(arm=[entry(elsewhere, NOW, "gone")], cancel=[entry(elsewhere, NOW, "gone").due_key])
        )
        await heard_all(writer, holder)
        assert holder.due_recorded.generation == before

        write = StreamWrite(SCOPE.stream("runs", elsewhere), 0, [NewRecord("run_started", {})])
        await writer.append([write], DueWorkChanges(arm=[entry(elsewhere, NOW, "start")]))
        with trio.fail_after(30):
            await holder.due_recorded.wait_beyond(before)
        after_append = holder.due_recorded.generation

        await writer.due_work.arm([entry(elsewhere, NOW + SWEEP, "soon")])  # within a sweep: through the port too
        with trio.fail_after(30):
            await holder.due_recorded.wait_beyond(after_append)


def test_the_rule_wakes_for_work_due_by_one_sweep_in_a_partition_not_held() -> None:
    partitioning = Partitioning(8)
    wake = DueWake(partitioning)
    run_id = next(r for r in iter(uuid7, None) if partition_of_due(SCOPE.key, r, 8) == 5)
    at_horizon = encode_changes(DueWorkChanges(arm=[entry(run_id, NOW + SWEEP)]))
    past_horizon = encode_changes(DueWorkChanges(arm=[entry(run_id, NOW + SWEEP + timedelta(microseconds=1))]))
    assert not wake.wakes(at_horizon)  # told nothing yet: this server holds every partition
    wake.watch(lambda partition: partition != 5, SWEEP, lambda: NOW)
    assert wake.wakes(at_horizon)
    assert not wake.wakes(past_horizon)
    assert not wake.wakes(encode_changes(DueWorkChanges(cancel=[entry(run_id, NOW).due_key])))
    wake.watch(lambda partition: True, SWEEP, lambda: NOW)
    assert not wake.wakes(at_horizon)
