"""Projections kept in the append's transaction, rebuilt when their version changes (every store)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio

from auto_runtime.ledger import (
    Ledger,
    NewRecord,
    PlaybookScope,
    Projection,
    Record,
    StreamWrite,
    TableSpec,
    open_ledger,
)
from auto_runtime.ledger.projections import Delete, Upsert, distinct_keys, fold, touches
from auto_runtime.ledger.sqlite.store import SqliteLedger
from tests.stored_rows import stored_rows

from .conftest import Target

ACME = PlaybookScope("acme", "finance")
T0 = datetime(2026, 12, 1, tzinfo=UTC)

RUNS_TABLE = TableSpec(
    name="test_runs",
    columns={"run_id": "text", "status": "text", "steps": "integer", "cost": "real", "detail": "json"},
    primary_key=("run_id",),
    indexes=(("status",),),
)


def run_keys(record: Record) -> list[tuple[Any, ...]]:
    run_id = record.metadata.get("run_id")
    return [(run_id,)] if isinstance(run_id, str) else []


def runs_after(row: dict[str, Any] | None, record: Record) -> dict[str, Any] | None:
    if record.type == "run_forgotten":
        return None
    row = dict(row) if row is not None else {"steps": 0, "cost": 0.0, "detail": {"types": []}}
    row["status"] = record.data.get("status", row.get("status"))
    row["steps"] += 1
    row["cost"] += 0.5
    row["detail"] = {"types": [*row["detail"]["types"], record.type], "text": "a\x00\ud800"}
    return row


RUNS_V1 = Projection("test_runs", 1, RUNS_TABLE, run_keys, runs_after)


def count_keys(record: Record) -> list[tuple[Any, ...]]:
    return [(record.type,)]


def count_after(row: dict[str, Any] | None, record: Record) -> dict[str, Any] | None:
    return {"total": (row["total"] if row else 0) + 1}


COUNTS = TableSpec("test_counts", {"type": "text", "total": "integer"}, ("type",))
COUNTS_V1 = Projection("test_counts", 1, COUNTS, count_keys, count_after)


def count_twice_after(row: dict[str, Any] | None, record: Record) -> dict[str, Any] | None:
    return {"total": (row["total"] if row else 0) + 2}


COUNTS_V2 = Projection("test_counts", 2, COUNTS, count_keys, count_twice_after)


def run_record(run_id: str, kind: str, status: str) -> NewRecord:
    return NewRecord(kind, {"status": status}, {"run_id": run_id})


async def runs(ledger: Ledger) -> dict[str, dict[str, Any]]:
    rows = await stored_rows(ledger, "SELECT * FROM test_runs ORDER BY run_id")
    return {row["run_id"]: RUNS_V1.decode_row(row) for row in rows}


async def test_a_projection_changes_in_the_append_that_causes_it(target: Target) -> None:
    async with target.open([RUNS_V1]) as ledger:
        stream = ACME.stream("runs", "r1")
        await ledger.append([StreamWrite(stream, 0, [run_record("r1", "run_started", "started")])])
        assert (await runs(ledger))["r1"] == {
            "run_id": "r1",
            "status": "started",
            "steps": 1,
            "cost": 0.5,
            "detail": {"types": ["run_started"], "text": "a\x00\ud800"},
        }
        await ledger.append([StreamWrite(stream, 1, [run_record("r1", "run_succeeded", "succeeded")])])
        row = (await runs(ledger))["r1"]
        assert (row["status"], row["steps"], row["cost"]) == ("succeeded", 2, 1.0)
        await ledger.append([StreamWrite(stream, 2, [run_record("r1", "run_forgotten", "-")])])
        assert await runs(ledger) == {}


async def test_a_read_takes_question_mark_parameters_on_every_store(target: Target) -> None:
    """The store's read statement, which the query objects' reads run too, takes `?` placeholders on both stores
    (numbered for asyncpg, a `?` inside a string literal left alone) and answers one type per value."""
    async with target.open([RUNS_V1]) as ledger:
        for number, status in enumerate(["started", "succeeded", "started"]):
            run_id = f"r{number}"
            await ledger.append([StreamWrite(ACME.stream("runs", run_id), 0, [run_record(run_id, "x", status)])])
        rows = await stored_rows(
            ledger,
            "SELECT run_id, steps FROM test_runs WHERE status = ? AND run_id <> ? ORDER BY run_id",
            ["started", "r9"],
        )
        assert rows == [{"run_id": "r0", "steps": 1}, {"run_id": "r2", "steps": 1}]
        counted = await stored_rows(ledger, "SELECT count(*) AS n FROM test_runs WHERE status = '?' OR steps = ?", [1])
        assert counted == [{"n": 3}]
        [mean] = await stored_rows(ledger, "SELECT CAST(avg(steps) AS DOUBLE PRECISION) AS mean FROM test_runs")
        assert mean == {"mean": 1.0}
        assert isinstance(mean["mean"], float)


async def test_a_read_refuses_to_write(target: Target) -> None:
    """The store's read statement runs read-only: on a `query_only` reader, or in a read-only transaction."""
    async with target.open([RUNS_V1]) as ledger:
        with pytest.raises(Exception, match=r"(?i)read.only|readonly"):
            await stored_rows(ledger, "DELETE FROM test_runs")


async def test_a_failing_projection_fails_only_its_own_append(target: Target) -> None:
    def keys(record: Record) -> list[tuple[Any, ...]]:
        return [(record.type,)]

    def after(row: dict[str, Any] | None, record: Record) -> dict[str, Any] | None:
        if record.data.get("explode"):
            raise RuntimeError("projection bug")
        return {"total": (row["total"] if row else 0) + 1}

    fragile = Projection("test_counts", 1, COUNTS, keys, after)
    async with target.open([fragile]) as ledger:
        stream = ACME.stream("runs", "r1")
        with pytest.raises(RuntimeError, match="projection bug"):
            await ledger.append([StreamWrite(stream, 0, [NewRecord("x", {}), NewRecord("x", {"explode": 1})])])
        assert await ledger.stream_version(stream) == 0
        await ledger.append([StreamWrite(stream, 0, [NewRecord("x", {})])])
        assert await stored_rows(ledger, "SELECT total FROM test_counts") == [{"total": 1}]


async def test_a_changed_version_rebuilds_the_projection_from_history(target: Target) -> None:
    async with target.open([COUNTS_V1]) as ledger:
        for number in range(3):
            await ledger.append([StreamWrite(ACME.stream("runs", str(number)), 0, [NewRecord("a", {})])])
        await ledger.append([StreamWrite(ACME.stream("runs", "b"), 0, [NewRecord("b", {})])])
        assert await stored_rows(ledger, "SELECT type, total FROM test_counts ORDER BY type") == [
            {"type": "a", "total": 3},
            {"type": "b", "total": 1},
        ]
    async with target.open([COUNTS_V1]) as ledger:
        assert ledger.rebuilt == []
        assert len(await stored_rows(ledger, "SELECT * FROM test_counts")) == 2
    async with target.open([COUNTS_V2]) as ledger:
        assert ledger.rebuilt == ["test_counts"]
        assert await stored_rows(ledger, "SELECT type, total FROM test_counts ORDER BY type") == [
            {"type": "a", "total": 6},
            {"type": "b", "total": 2},
        ]
        await ledger.append([StreamWrite(ACME.stream("runs", "b"), 1, [NewRecord("b", {})])])
        assert await stored_rows(ledger, "SELECT total FROM test_counts WHERE type = ?", ["b"]) == [{"total": 4}]


async def test_a_new_projection_is_filled_from_existing_history(target: Target) -> None:
    async with target.open() as ledger:
        await ledger.append([StreamWrite(ACME.stream("runs", "r1"), 0, [run_record("r1", "x", "started")])])
    async with target.open([RUNS_V1, COUNTS_V1]) as ledger:
        assert (await runs(ledger))["r1"]["status"] == "started"
        assert await stored_rows(ledger, "SELECT type, total FROM test_counts") == [{"type": "x", "total": 1}]


def test_projection_definitions_are_checked() -> None:
    with pytest.raises(ValueError):
        TableSpec("ledger_records", {"a": "text"}, ("a",))
    with pytest.raises(ValueError):
        TableSpec("t", {"a": "blob"}, ("a",))  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        TableSpec("t", {"a": "text"}, ("b",))
    with pytest.raises(ValueError):
        Projection("t", 0, COUNTS, count_keys, count_after)


async def test_concurrent_appends_to_one_projection_row_lose_no_change(target: Target) -> None:
    async with target.open([COUNTS_V1]) as ledger:

        async def appender(task: int) -> None:
            for number in range(10):
                stream = ACME.stream("runs", f"t{task}-{number}")
                await ledger.append([StreamWrite(stream, 0, [NewRecord("counted", {}), NewRecord("other", {})])])

        async with trio.open_nursery() as nursery:
            for task in range(12):
                nursery.start_soon(appender, task)
        assert await stored_rows(ledger, "SELECT type, total FROM test_counts ORDER BY type") == [
            {"type": "counted", "total": 120},
            {"type": "other", "total": 120},
        ]


@pytest.mark.postgres
async def test_servers_starting_together_rebuild_a_projection_once(postgres_url: str) -> None:
    target = Target("postgres", None, postgres_url)
    async with target.open() as ledger:
        await ledger.append([StreamWrite(ACME.stream("runs", "r1"), 0, [NewRecord("a", {})])])
    rebuilt: list[list[str]] = []

    async def start_server(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with target.open([COUNTS_V1]) as ledger:
            rebuilt.append(list(ledger.rebuilt))
            task_status.started()
            assert await stored_rows(ledger, "SELECT type, total FROM test_counts") == [{"type": "a", "total": 1}]

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(start_server)
    assert sorted(rebuilt) == [[], [], ["test_counts"]]


def recorded(kind: str, run_id: str, status: str = "") -> Record:
    return Record("id", ACME.stream("runs", run_id), 1, 1, kind, {"status": status}, {"run_id": run_id}, T0)


def one_at_a_time(projection: Projection, records: list[Record]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The rows after applying each record's change to a table in turn (the reference `fold` must equal)."""
    table: dict[tuple[Any, ...], dict[str, Any]] = {}
    for key, record in touches(projection, records):
        change = projection.change(key, table.get(key), record)
        if isinstance(change, Upsert):
            table[key] = dict(zip(projection.table.columns, change.values, strict=True))
        elif isinstance(change, Delete):
            del table[key]
    return table


def test_a_fold_equals_the_changes_applied_one_at_a_time_with_one_write_per_row() -> None:
    records = [
        recorded("run_started", "r1", "started"),
        recorded("step", "r2", "started"),
        recorded("step", "r1", "running"),
        recorded("run_forgotten", "r2"),
        recorded("run_forgotten", "r3"),
        recorded("step", "r1", "done"),
        recorded("run_started", "r3", "again"),
    ]
    before = one_at_a_time(RUNS_V1, records[:2])
    stored: dict[tuple[Any, ...], Any] = {key: before.get(key) for key in distinct_keys(touches(RUNS_V1, records))}
    changes = fold(RUNS_V1, touches(RUNS_V1, records[2:]), stored)

    assert [key for key, _ in changes] == [("r1",), ("r2",), ("r3",)]
    after = {**before}
    for key, change in changes:
        if isinstance(change, Upsert):
            after[key] = dict(zip(RUNS_TABLE.columns, change.values, strict=True))
        else:
            del after[key]
    assert after == one_at_a_time(RUNS_V1, records)
    assert after[("r1",)]["steps"] == 3 and ("r2",) not in after and after[("r3",)]["status"] == "again"


def test_a_fold_writes_nothing_for_a_row_created_and_deleted_or_left_as_it_was() -> None:
    created_and_gone = [recorded("run_started", "r1", "started"), recorded("run_forgotten", "r1")]
    assert fold(RUNS_V1, touches(RUNS_V1, created_and_gone), {("r1",): None}) == []
    same = Projection("test_same", 1, COUNTS, count_keys, lambda row, record: row)
    stored = {("step",): {"type": "step", "total": 4}}
    assert fold(same, touches(same, [recorded("step", "r1")]), stored) == []


async def test_an_append_reads_and_writes_each_row_it_touches_once(tmp_path: Path) -> None:
    async with open_ledger(tmp_path / "ledger.db", projections=[RUNS_V1, COUNTS_V1]) as ledger:
        assert isinstance(ledger, SqliteLedger)
        statements: list[str] = []
        await ledger.write(lambda conn: conn.set_trace_callback(statements.append))
        stream = ACME.stream("runs", "r1")
        kinds = ["run_started", "step", "step", "step", "step", "run_ended"]
        await ledger.append([StreamWrite(stream, 0, [run_record("r1", kind, kind) for kind in kinds])])
        await ledger.write(lambda conn: conn.set_trace_callback(None))

        def count(prefix: str) -> int:
            return sum(statement.startswith(prefix) for statement in statements)

        assert count("SELECT run_id, status, steps, cost, detail FROM test_runs") == 1
        assert count("INSERT INTO test_runs") == 1
        assert count("SELECT type, total FROM test_counts") == 3  # run_started, step, run_ended
        assert count("INSERT INTO test_counts") == 3
        assert (await runs(ledger))["r1"]["steps"] == 6
        assert await stored_rows(ledger, "SELECT type, total FROM test_counts ORDER BY type") == [
            {"type": "run_ended", "total": 1},
            {"type": "run_started", "total": 1},
            {"type": "step", "total": 4},
        ]
