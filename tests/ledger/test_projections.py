"""Projections kept in the append's transaction, rebuilt when their version changes (every store)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, Projection, Record, StreamWrite, TableSpec

from .conftest import Target

ACME = PlaybookScope("acme", "finance")

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
    rows = await ledger.fetch("SELECT * FROM test_runs ORDER BY run_id")
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


async def test_fetch_takes_question_mark_parameters_on_every_store(target: Target) -> None:
    async with target.open([RUNS_V1]) as ledger:
        for number, status in enumerate(["started", "succeeded", "started"]):
            run_id = f"r{number}"
            await ledger.append([StreamWrite(ACME.stream("runs", run_id), 0, [run_record(run_id, "x", status)])])
        rows = await ledger.fetch(
            "SELECT run_id, steps FROM test_runs WHERE status = ? AND run_id <> ? ORDER BY run_id",
            ["started", "r9"],
        )
        assert rows == [{"run_id": "r0", "steps": 1}, {"run_id": "r2", "steps": 1}]
        counted = await ledger.fetch("SELECT count(*) AS n FROM test_runs WHERE status = '?' OR steps = ?", [1])
        assert counted == [{"n": 3}]
        [mean] = await ledger.fetch("SELECT CAST(avg(steps) AS DOUBLE PRECISION) AS mean FROM test_runs")
        assert mean == {"mean": 1.0}
        assert isinstance(mean["mean"], float)


async def test_fetch_refuses_to_write(target: Target) -> None:
    async with target.open([RUNS_V1]) as ledger:
        with pytest.raises(Exception, match=r"(?i)read.only|readonly"):
            await ledger.fetch("DELETE FROM test_runs")


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
        assert await ledger.fetch("SELECT total FROM test_counts") == [{"total": 1}]


async def test_a_changed_version_rebuilds_the_projection_from_history(target: Target) -> None:
    async with target.open([COUNTS_V1]) as ledger:
        for number in range(3):
            await ledger.append([StreamWrite(ACME.stream("runs", str(number)), 0, [NewRecord("a", {})])])
        await ledger.append([StreamWrite(ACME.stream("runs", "b"), 0, [NewRecord("b", {})])])
        assert await ledger.fetch("SELECT type, total FROM test_counts ORDER BY type") == [
            {"type": "a", "total": 3},
            {"type": "b", "total": 1},
        ]
    async with target.open([COUNTS_V1]) as ledger:
        assert ledger.rebuilt == []
        assert len(await ledger.fetch("SELECT * FROM test_counts")) == 2
    async with target.open([COUNTS_V2]) as ledger:
        assert ledger.rebuilt == ["test_counts"]
        assert await ledger.fetch("SELECT type, total FROM test_counts ORDER BY type") == [
            {"type": "a", "total": 6},
            {"type": "b", "total": 2},
        ]
        await ledger.append([StreamWrite(ACME.stream("runs", "b"), 1, [NewRecord("b", {})])])
        assert await ledger.fetch("SELECT total FROM test_counts WHERE type = ?", ["b"]) == [{"total": 4}]


async def test_a_new_projection_is_filled_from_existing_history(target: Target) -> None:
    async with target.open() as ledger:
        await ledger.append([StreamWrite(ACME.stream("runs", "r1"), 0, [run_record("r1", "x", "started")])])
    async with target.open([RUNS_V1, COUNTS_V1]) as ledger:
        assert (await runs(ledger))["r1"]["status"] == "started"
        assert await ledger.fetch("SELECT type, total FROM test_counts") == [{"type": "x", "total": 1}]


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
        assert await ledger.fetch("SELECT type, total FROM test_counts ORDER BY type") == [
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
            assert await ledger.fetch("SELECT type, total FROM test_counts") == [{"type": "a", "total": 1}]

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(start_server)
    assert sorted(rebuilt) == [[], [], ["test_counts"]]
