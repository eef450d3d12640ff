"""Due work (timers) on both stores: arm, cancel, tombstones, idempotency, due order, next_due,
mark_fired, and atomicity with appends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trio

from auto_runtime.ledger import (
    DueEntry,
    DueKey,
    DueWorkChanges,
    DuplicateRecordIdError,
    Ledger,
    NewRecord,
    OrgScope,
    PlaybookScope,
    Projection,
    Record,
    StreamWrite,
    TableSpec,
    VersionConflict,
)
from auto_runtime.ledger.postgres import due_work_statements as postgres_due
from auto_runtime.ledger.records import to_microseconds as to_us
from auto_runtime.ledger.sqlite import due_work_statements as sqlite_due
from tests.stored_rows import stored_rows

from .conftest import Target

ACME = PlaybookScope("acme", "finance")
GLOBEX = PlaybookScope("globex", "ops")
T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def entry(key: str, seconds: float, run: str = "r1", scope: PlaybookScope = ACME, payload: Any = None) -> DueEntry:
    return DueEntry(scope, run, key, at(seconds), {"key": key} if payload is None else payload)


async def states(ledger: Ledger, run: str = "r1", scope: PlaybookScope = ACME) -> dict[str, str]:
    return {row.key: row.state for row in await ledger.due_work.entries_of_run(scope, run)}


async def test_due_answers_armed_entries_oldest_first_across_playbooks(ledger: Ledger) -> None:
    await ledger.due_work.arm(
        [
            entry("late", 30),
            entry("b", 10, run="r2", scope=GLOBEX),
            entry("first", 5),
            entry("a", 10, run="r2", scope=GLOBEX),
            entry("tie", 10),
        ]
    )
    await ledger.due_work.arm([DueEntry(OrgScope("acme"), "r9", "org-level", at(7), [1, "two", None])])
    due = await ledger.due_work.due(at(10))
    assert [(e.scope, e.run_id, e.key) for e in due] == [
        (ACME, "r1", "first"),
        (OrgScope("acme"), "r9", "org-level"),
        (ACME, "r1", "tie"),
        (GLOBEX, "r2", "a"),
        (GLOBEX, "r2", "b"),
    ]
    assert due[0] == DueEntry(ACME, "r1", "first", at(5), {"key": "first"})
    assert due[1].payload == [1, "two", None]
    assert [e.key for e in await ledger.due_work.due(at(10), limit=2)] == ["first", "org-level"]
    assert await ledger.due_work.due(at(4.999)) == []
    assert [e.key for e in await ledger.due_work.due(at(60))][-1] == "late"


async def test_next_due_is_the_earliest_armed_time(ledger: Ledger) -> None:
    assert await ledger.due_work.next_due() is None
    await ledger.due_work.arm([entry("a", 20), entry("b", 3), entry("c", 9)])
    assert await ledger.due_work.next_due() == at(3)
    await ledger.due_work.mark_fired([DueKey(ACME, "r1", "b")])
    assert await ledger.due_work.next_due() == at(9)
    await ledger.due_work.cancel([DueKey(ACME, "r1", "c")])
    assert await ledger.due_work.next_due() == at(20)
    await ledger.due_work.cancel([DueKey(ACME, "r1", "a")])
    assert await ledger.due_work.next_due() is None


async def test_arming_a_key_twice_keeps_the_first_entry(ledger: Ledger) -> None:
    await ledger.due_work.arm([entry("t", 5, payload={"first": True})])
    await ledger.due_work.arm([entry("t", 1, payload={"first": False}), entry("u", 2)])
    assert await ledger.due_work.due(at(10)) == [entry("u", 2), entry("t", 5, payload={"first": True})]
    await ledger.due_work.arm([entry("v", 8, payload=1), entry("v", 4, payload=2)])
    [v] = [e for e in await ledger.due_work.due(at(10)) if e.key == "v"]
    assert (v.due_at, v.payload) == (at(8), 1)


async def test_a_cancel_before_the_arm_leaves_a_tombstone_that_refuses_the_arm(ledger: Ledger) -> None:
    await ledger.due_work.cancel([DueKey(ACME, "r1", "early-cancel")])
    [tombstone] = await ledger.due_work.entries_of_run(ACME, "r1")
    assert (tombstone.key, tombstone.state, tombstone.due_at, tombstone.payload) == (
        "early-cancel",
        "cancelled",
        None,
        None,
    )
    await ledger.due_work.arm([entry("early-cancel", 1)])
    assert await ledger.due_work.due(at(10)) == []
    assert await states(ledger) == {"early-cancel": "cancelled"}


async def test_cancel_stops_an_armed_entry_and_leaves_fired_ones_fired(ledger: Ledger) -> None:
    await ledger.due_work.arm([entry("a", 1), entry("b", 2)])
    await ledger.due_work.mark_fired([DueKey(ACME, "r1", "b")])
    await ledger.due_work.cancel([DueKey(ACME, "r1", "a"), DueKey(ACME, "r1", "b")])
    assert await states(ledger) == {"a": "cancelled", "b": "fired"}
    await ledger.due_work.arm([entry("a", 1), entry("b", 2)])
    assert await states(ledger) == {"a": "cancelled", "b": "fired"}
    assert await ledger.due_work.due(at(10)) == []


async def test_a_key_armed_and_cancelled_in_one_change_ends_cancelled(ledger: Ledger) -> None:
    await ledger.due_work.change(DueWorkChanges(arm=[entry("x", 1)], cancel=[DueKey(ACME, "r1", "x")]))
    assert await states(ledger) == {"x": "cancelled"}


async def test_an_entry_stays_due_until_it_is_marked_fired(ledger: Ledger) -> None:
    await ledger.due_work.arm([entry("a", 1), entry("b", 2)])
    first = await ledger.due_work.due(at(5))
    again = await ledger.due_work.due(at(5))
    assert first == again == [entry("a", 1), entry("b", 2)]
    assert await ledger.due_work.mark_fired([DueKey(ACME, "r1", "a")]) == 1
    assert await ledger.due_work.due(at(5)) == [entry("b", 2)]
    assert await ledger.due_work.mark_fired([DueKey(ACME, "r1", "a"), DueKey(ACME, "r1", "nope")]) == 0
    await ledger.due_work.cancel([DueKey(ACME, "r1", "b")])
    assert await ledger.due_work.mark_fired([DueKey(ACME, "r1", "b")]) == 0
    assert await states(ledger) == {"a": "fired", "b": "cancelled"}


async def test_forget_run_removes_one_runs_rows_tombstones_included(ledger: Ledger) -> None:
    await ledger.due_work.arm([entry("a", 1), entry("b", 2, run="r2")])
    await ledger.due_work.cancel([DueKey(ACME, "r1", "c")])
    assert await ledger.due_work.forget_run(ACME, "r1") == 2
    assert await ledger.due_work.entries_of_run(ACME, "r1") == []
    assert await states(ledger, "r2") == {"b": "armed"}


async def test_an_append_carries_its_due_work_changes(ledger: Ledger) -> None:
    stream = ACME.stream("run-logs", "r1")
    await ledger.due_work.arm([entry("old", 3)])
    records = await ledger.append(
        [StreamWrite(stream, 0, [NewRecord("input_applied", {"n": 1})])],
        due_work=DueWorkChanges(arm=[entry("new", 4)], cancel=[DueKey(ACME, "r1", "old")]),
    )
    assert [r.position for r in records] == [1]
    assert await states(ledger) == {"new": "armed", "old": "cancelled"}
    assert await ledger.due_work.due(at(10)) == [entry("new", 4)]


async def test_a_version_conflict_changes_no_timer(ledger: Ledger) -> None:
    stream = ACME.stream("run-logs", "r1")
    await ledger.append([StreamWrite(stream, 0, [NewRecord("started", {})])])
    await ledger.due_work.arm([entry("armed-before", 3)])
    refused = DueWorkChanges(
        arm=[entry("would-arm", 1)],
        cancel=[DueKey(ACME, "r1", "armed-before"), DueKey(ACME, "r1", "would-tombstone")],
    )
    with pytest.raises(VersionConflict):
        await ledger.append([StreamWrite(stream, 0, [NewRecord("input_applied", {})])], due_work=refused)
    assert await states(ledger) == {"armed-before": "armed"}
    assert await ledger.stream_version(stream) == 1
    await ledger.append([StreamWrite(stream, 1, [NewRecord("input_applied", {})])], due_work=refused)
    assert await states(ledger) == {"armed-before": "cancelled", "would-arm": "armed", "would-tombstone": "cancelled"}


async def test_an_append_marks_the_entries_it_fired_with_its_records_or_not_at_all(ledger: Ledger) -> None:
    stream = ACME.stream("run-logs", "r1")
    await ledger.append([StreamWrite(stream, 0, [NewRecord("started", {})])])
    await ledger.due_work.arm([entry("wait", 1), entry("also", 2)])
    await ledger.due_work.cancel([DueKey(ACME, "r1", "gone")])
    took = DueWorkChanges(arm=[entry("next", 5)], fire=[DueKey(ACME, "r1", "wait"), DueKey(ACME, "r1", "gone")])
    with pytest.raises(VersionConflict):
        await ledger.append([StreamWrite(stream, 0, [NewRecord("timer_fired", {})])], due_work=took)
    assert await states(ledger) == {"wait": "armed", "also": "armed", "gone": "cancelled"}
    assert await ledger.due_work.due(at(10)) == [entry("wait", 1), entry("also", 2)]
    await ledger.append([StreamWrite(stream, 1, [NewRecord("timer_fired", {})])], due_work=took)
    assert await states(ledger) == {"wait": "fired", "also": "armed", "gone": "cancelled", "next": "armed"}
    assert await ledger.due_work.due(at(10)) == [entry("also", 2), entry("next", 5)]


async def test_marks_apply_after_the_arms_and_cancels_of_the_same_changes(ledger: Ledger) -> None:
    await ledger.due_work.arm([entry("a", 1), entry("b", 2)])
    both = DueWorkChanges(cancel=[DueKey(ACME, "r1", "a")], fire=[DueKey(ACME, "r1", "a"), DueKey(ACME, "r1", "b")])
    await ledger.due_work.change(both)
    assert await states(ledger) == {"a": "cancelled", "b": "fired"}


def test_only_arms_the_same_changes_do_not_cancel_are_net_arms() -> None:
    changes = DueWorkChanges(
        arm=[entry("deadline", 60), entry("wait", 1)],
        cancel=[DueKey(ACME, "r1", "deadline"), DueKey(ACME, "r1", "other")],
    )
    assert changes.net_arms == [entry("wait", 1)]
    assert DueWorkChanges(arm=[entry("deadline", 60)], cancel=[DueKey(ACME, "r1", "deadline")]).net_arms == []
    assert DueWorkChanges(arm=[entry("deadline", 60)], cancel=[DueKey(ACME, "r2", "deadline")]).net_arms == [
        entry("deadline", 60)
    ]
    assert bool(DueWorkChanges(fire=[DueKey(ACME, "r1", "x")]))


async def test_other_refused_appends_change_no_timer_either(target: Target) -> None:
    def keys(record: Record) -> list[tuple[Any, ...]]:
        return [(record.type,)]

    def after(row: dict[str, Any] | None, record: Record) -> dict[str, Any] | None:
        if record.data.get("explode"):
            raise RuntimeError("projection bug")
        return {"total": (row["total"] if row else 0) + 1}

    table = TableSpec("test_counts", {"type": "text", "total": "integer"}, ("type",))
    async with target.open([Projection("test_counts", 1, table, keys, after)]) as ledger:
        stream = ACME.stream("run-logs", "r1")
        changes = DueWorkChanges(arm=[entry("t", 1)])
        with pytest.raises(RuntimeError, match="projection bug"):
            await ledger.append([StreamWrite(stream, 0, [NewRecord("x", {"explode": 1})])], due_work=changes)
        await ledger.append([StreamWrite(stream, 0, [NewRecord("x", {}, id="fixed-id")])])
        with pytest.raises(DuplicateRecordIdError):
            await ledger.append(
                [StreamWrite(ACME.stream("run-logs", "r2"), 0, [NewRecord("x", {}, id="fixed-id")])], due_work=changes
            )
        assert await ledger.due_work.entries_of_run(ACME, "r1") == []
        await ledger.append([StreamWrite(stream, 1, [NewRecord("x", {})])], due_work=changes)
        assert await states(ledger) == {"t": "armed"}


async def test_many_appends_with_due_work_at_once_each_keep_their_own_changes(ledger: Ledger) -> None:
    async def apply(run: int) -> None:
        stream = ACME.stream("run-logs", f"r{run}")
        await ledger.append(
            [StreamWrite(stream, 0, [NewRecord("input_applied", {})])],
            due_work=DueWorkChanges(arm=[entry("t", run, run=f"r{run}")]),
        )
        with pytest.raises(VersionConflict):
            await ledger.append(
                [StreamWrite(stream, 0, [NewRecord("input_applied", {})])],
                due_work=DueWorkChanges(arm=[entry("never", 0, run=f"r{run}")]),
            )

    async with trio.open_nursery() as nursery:
        for run in range(40):
            nursery.start_soon(apply, run)
    due = await ledger.due_work.due(at(100), limit=1000)
    assert [(e.run_id, e.key) for e in due] == [(f"r{run}", "t") for run in range(40)]


async def test_armed_timers_outlive_reopening_the_store(target: Target) -> None:
    async with target.open() as ledger:
        await ledger.due_work.arm([entry("a", 1)])
        await ledger.due_work.cancel([DueKey(ACME, "r1", "b")])
    async with target.open() as ledger:
        assert await ledger.due_work.due(at(5)) == [entry("a", 1)]
        assert await states(ledger) == {"a": "armed", "b": "cancelled"}


async def test_due_work_refuses_malformed_entries_and_writes_nothing(ledger: Ledger) -> None:
    with pytest.raises(ValueError, match="offset"):
        await ledger.due_work.arm([DueEntry(ACME, "r1", "naive", datetime(2026, 1, 1))])
    with pytest.raises(ValueError, match="not JSON"):
        await ledger.due_work.arm([entry("ok", 1), DueEntry(ACME, "r1", "bad", T0, {"x": object()})])
    with pytest.raises(ValueError, match="key"):
        await ledger.due_work.arm([DueEntry(ACME, "r1", "", T0)])
    with pytest.raises(ValueError, match="segment"):
        await ledger.due_work.cancel([DueKey(ACME, "a/b", "k")])
    with pytest.raises(ValueError, match="limit"):
        await ledger.due_work.due(T0, limit=0)
    with pytest.raises(ValueError, match="not JSON"):
        await ledger.append(
            [StreamWrite(ACME.stream("run-logs", "r1"), 0, [NewRecord("x", {})])],
            due_work=DueWorkChanges(arm=[DueEntry(ACME, "r1", "bad", T0, float("nan"))]),
        )
    assert await ledger.stream_version(ACME.stream("run-logs", "r1")) == 0
    assert await ledger.due_work.entries_of_run(ACME, "r1") == []


async def test_due_reads_the_armed_index_not_the_whole_table(target: Target) -> None:
    async with target.open() as ledger:
        for run in range(20):
            scope = PlaybookScope("acme", f"pb{run}")
            armed = [DueEntry(scope, "r", f"k{n:03}", at(n)) for n in range(100)]
            await ledger.due_work.arm(armed)
            await ledger.due_work.mark_fired([e.due_key for e in armed[:98]])
        if target.kind == "sqlite":
            reads: tuple[tuple[str, tuple[Any, ...]], ...] = (
                (sqlite_due.DUE_SQL, (to_us(at(1000)), 10)),
                (sqlite_due.NEXT_DUE_SQL, ()),
                (sqlite_due.DUE_OF_PARTITIONS_SQL, (to_us(at(1000)), "[1, 5]", 10)),
                (sqlite_due.NEXT_DUE_OF_PARTITIONS_SQL, ("[1, 5]",)),
            )
        else:
            reads = (
                (postgres_due.DUE_SQL, (to_us(at(1000)), 10, None)),
                (postgres_due.NEXT_DUE_SQL, (None,)),
                (postgres_due.DUE_SQL, (to_us(at(1000)), 10, [1, 5])),
                (postgres_due.NEXT_DUE_SQL, ([1, 5],)),
            )
        for sql, params in reads:
            if target.kind == "sqlite":
                plan = await stored_rows(ledger, "EXPLAIN QUERY PLAN " + sql, params)
                steps = [str(row["detail"]) for row in plan]
                # One step reading the partial index of armed entries in order (no sort, no table scan), and for
                # some partitions only the list of their numbers beside it.
                assert "USING INDEX ledger_due_work_armed" in steps[0], steps
                assert all("ledger_due_work" not in step and "TEMP B-TREE" not in step for step in steps[1:]), steps
            else:
                plan = await stored_rows(ledger, "EXPLAIN " + sql, params)
                details = " ".join(str(row["QUERY PLAN"]) for row in plan)
                # The armed index finds the rows (PostgreSQL may sort the few it finds); no table scan.
                assert "ledger_due_work_armed" in details and "Seq Scan" not in details, details
        due = await ledger.due_work.due(at(1000), limit=100)
        by_scope_key = sorted(range(20), key=lambda run: f"pb{run}")
        assert [(e.scope, e.key) for e in due] == [
            (PlaybookScope("acme", f"pb{run}"), key) for key in ("k098", "k099") for run in by_scope_key
        ]
