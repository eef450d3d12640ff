"""Appends with an expected version, and reading streams and records back (every store)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import trio

from auto_runtime.ledger import (
    ANY_VERSION,
    MAX_RECORDS_PER_APPEND,
    DuplicateRecordIdError,
    Ledger,
    LedgerClosedError,
    NewRecord,
    OrgScope,
    PlaybookScope,
    StreamName,
    StreamWrite,
    VersionConflict,
)

from .conftest import Target

ACME = PlaybookScope("acme", "finance")
OTHER = PlaybookScope("acme", "sales")


def new(kind: str = "thing_happened", data: object = None, **metadata: object) -> NewRecord:
    return NewRecord(kind, data if data is not None else {"n": 1}, metadata)


async def test_an_append_returns_the_records_as_recorded(ledger: Ledger) -> None:
    stream = ACME.stream("runs", "r1")
    before = datetime.now(UTC) - timedelta(seconds=1)
    records = await ledger.append([StreamWrite(stream, 0, [new("run_started"), new("run_succeeded")])])
    assert [r.position for r in records] == [1, 2]
    assert [r.type for r in records] == ["run_started", "run_succeeded"]
    assert records[0].global_position < records[1].global_position
    assert all(r.stream == stream for r in records)
    assert all(r.recorded_at.tzinfo is not None and r.recorded_at >= before for r in records)
    assert uuid.UUID(records[0].id).version == 7
    assert uuid.UUID(NewRecord("x", {}, {}, None).id).version == 7
    assert await ledger.read_stream(stream) == records
    assert await ledger.stream_version(stream) == 2


async def test_a_stream_that_was_never_written_is_at_version_zero_and_empty(ledger: Ledger) -> None:
    stream = ACME.stream("runs", "nothing")
    assert await ledger.stream_version(stream) == 0
    assert await ledger.read_stream(stream) == []


async def test_appending_with_the_version_read_continues_the_stream(ledger: Ledger) -> None:
    stream = ACME.stream("runs", "r1")
    await ledger.append([StreamWrite(stream, 0, [new()])])
    more = await ledger.append([StreamWrite(stream, 1, [new(), new()])])
    assert [r.position for r in more] == [2, 3]
    assert [r.position for r in await ledger.read_stream(stream, from_position=2)] == [2, 3]
    assert [r.position for r in await ledger.read_stream(stream, limit=1)] == [1]


async def test_a_stale_version_is_a_conflict_that_writes_nothing(ledger: Ledger) -> None:
    stream = ACME.stream("runs", "r1")
    await ledger.append([StreamWrite(stream, 0, [new()])])
    with pytest.raises(VersionConflict) as raised:
        await ledger.append([StreamWrite(stream, 0, [new()])])
    assert raised.value.stream == stream
    with pytest.raises(VersionConflict):
        await ledger.append([StreamWrite(stream, 2, [new()])])
    assert await ledger.stream_version(stream) == 1


async def test_an_append_over_several_streams_is_atomic(ledger: Ledger) -> None:
    run = ACME.stream("runs", "r1")
    index = ACME.stream("definitions", "workflow")
    await ledger.append([StreamWrite(index, 0, [new()])])
    with pytest.raises(VersionConflict) as raised:
        await ledger.append([StreamWrite(run, 0, [new()]), StreamWrite(index, 0, [new()])])
    assert raised.value.stream == index
    assert await ledger.read_stream(run) == []
    both = await ledger.append([StreamWrite(run, 0, [new()]), StreamWrite(index, 1, [new()])])
    assert [(r.stream, r.position) for r in both] == [(run, 1), (index, 2)]


async def test_any_version_appends_without_a_check(ledger: Ledger) -> None:
    stream = OrgScope("acme").stream("playbooks")
    await ledger.append([StreamWrite(stream, ANY_VERSION, [new()])])
    records = await ledger.append([StreamWrite(stream, ANY_VERSION, [new()])])
    assert records[0].position == 2


async def test_step_ids_are_kept_as_text_and_a_reused_id_writes_nothing(ledger: Ledger) -> None:
    stream = ACME.stream("runs", "r1")
    input_id = "0199a3c4-7d2e-7c1a-9b3f-2f1e0d9c8b7a"
    ids = [input_id, f"{input_id}_1", f"{input_id}_2"]
    records = await ledger.append([StreamWrite(stream, 0, [NewRecord("step_finished", {}, {}, i) for i in ids])])
    assert [r.id for r in records] == ids
    with pytest.raises(DuplicateRecordIdError) as raised:
        await ledger.append([StreamWrite(stream, 3, [NewRecord("x", {}, {}, "fresh"), NewRecord("x", {}, {}, ids[1])])])
    assert raised.value.record_id == ids[1]
    assert await ledger.stream_version(stream) == 3
    assert await ledger.read_record(ACME, "fresh") is None


async def test_a_record_is_read_only_within_its_scope(ledger: Ledger) -> None:
    [record] = await ledger.append([StreamWrite(ACME.stream("runs", "r1"), 0, [new()])])
    assert await ledger.read_record(ACME, record.id) == record
    assert await ledger.read_record(OTHER, record.id) is None
    assert await ledger.read_record(PlaybookScope("evil", "finance"), record.id) is None
    assert await ledger.read_record(ACME, "missing") is None


async def test_json_that_text_stores_often_lose_round_trips(ledger: Ledger) -> None:
    data = {
        "nul": "a\x00b",
        "lone_high": "\ud800",
        "lone_low": "x\udfff",
        "astral": "\U0001f600",
        "quotes": "'\"\\?",
        "nested": [1, 2.5, None, True, {"k": []}],
        "big": 2**62,
    }
    metadata = {"correlation_id": "r1", "by": "user:\x00", "definition": {"type": "workflow", "name": "w"}}
    stream = ACME.stream("runs", "r1")
    [appended] = await ledger.append([StreamWrite(stream, 0, [NewRecord("x", data, metadata)])])
    [read] = await ledger.read_stream(stream)
    assert read.data == data
    assert read.metadata == {**metadata, "trace_id": read.metadata["trace_id"], "span_id": read.metadata["span_id"]}
    assert read == appended


@pytest.mark.parametrize("data", ["text", 42, None, [1, "two"], 1.5])
async def test_data_may_be_any_json_value(ledger: Ledger, data: object) -> None:
    stream = ACME.stream("runs", "r1")
    await ledger.append([StreamWrite(stream, 0, [NewRecord("x", data)])])
    assert (await ledger.read_stream(stream))[0].data == data


async def test_appends_that_are_programming_errors_are_refused(ledger: Ledger) -> None:
    stream = ACME.stream("runs", "r1")
    too_many = [new() for _ in range(MAX_RECORDS_PER_APPEND + 1)]
    with pytest.raises(ValueError, match=f"at most {MAX_RECORDS_PER_APPEND} records"):
        await ledger.append([StreamWrite(stream, 0, too_many)])
    with pytest.raises(ValueError, match="twice"):
        await ledger.append([StreamWrite(stream, 0, [new()]), StreamWrite(stream, 1, [new()])])
    with pytest.raises(ValueError):
        await ledger.append([StreamWrite(stream, -1, [new()])])
    with pytest.raises(ValueError):
        await ledger.append([StreamWrite(stream, 0, [])])
    with pytest.raises(ValueError):
        await ledger.append([StreamWrite(stream, 0, [NewRecord("bad type", {})])])
    with pytest.raises(ValueError):
        await ledger.append([StreamWrite(stream, 0, [NewRecord("x", {}, {}, "bad/id")])])
    with pytest.raises(ValueError, match="not JSON"):
        await ledger.append([StreamWrite(stream, 0, [NewRecord("x", {"when": datetime.now(UTC)})])])
    with pytest.raises(ValueError):
        await ledger.append([])
    assert await ledger.stream_version(stream) == 0
    exactly = [new() for _ in range(MAX_RECORDS_PER_APPEND)]
    assert len(await ledger.append([StreamWrite(stream, 0, exactly)])) == MAX_RECORDS_PER_APPEND


async def test_a_refused_append_does_not_disturb_appends_committed_with_it(ledger: Ledger) -> None:
    """On SQLite these share one group commit; each append succeeds or fails on its own."""
    stream = ACME.stream("runs", "shared")
    await ledger.append([StreamWrite(stream, 0, [new()])])
    outcomes: dict[int, str] = {}

    async def attempt(number: int) -> None:
        try:
            await ledger.append(
                [StreamWrite(stream, 1, [new()]), StreamWrite(ACME.stream("own", str(number)), 0, [new()])]
            )
            outcomes[number] = "ok"
        except VersionConflict:
            outcomes[number] = "conflict"

    async with trio.open_nursery() as nursery:
        for number in range(20):
            nursery.start_soon(attempt, number)
    assert sorted(outcomes.values()).count("ok") == 1
    assert await ledger.stream_version(stream) == 2
    winners = [n for n, outcome in outcomes.items() if outcome == "ok"]
    for number in range(20):
        expected = 1 if number in winners else 0
        assert await ledger.stream_version(ACME.stream("own", str(number))) == expected


async def test_a_duplicate_id_refuses_only_its_own_append_among_concurrent_ones(ledger: Ledger) -> None:
    [taken] = await ledger.append([StreamWrite(ACME.stream("runs", "taken"), 0, [new()])])
    outcomes: dict[int, str] = {}

    async def attempt(number: int) -> None:
        record_id = taken.id if number == 7 else f"id-{number}"
        try:
            await ledger.append(
                [StreamWrite(ACME.stream("runs", f"r{number}"), 0, [NewRecord("x", {}, {}, record_id)])]
            )
            outcomes[number] = "ok"
        except DuplicateRecordIdError:
            outcomes[number] = "duplicate"

    async with trio.open_nursery() as nursery:
        for number in range(16):
            nursery.start_soon(attempt, number)
    assert outcomes == {number: "duplicate" if number == 7 else "ok" for number in range(16)}
    for number in range(16):
        expected = 0 if number == 7 else 1
        assert await ledger.stream_version(ACME.stream("runs", f"r{number}")) == expected
    positions = [record.global_position for record in (await ledger.read_forward(None, 100))[0]]
    assert len(set(positions)) == 16


async def test_appends_over_the_same_streams_in_either_order_all_commit(ledger: Ledger) -> None:
    first, second = ACME.stream("pair", "a"), ACME.stream("pair", "b")

    async def appender(streams: tuple[StreamName, StreamName]) -> None:
        for _ in range(20):
            await ledger.append([StreamWrite(stream, ANY_VERSION, [new()]) for stream in streams])

    async with trio.open_nursery() as nursery:
        for task in range(6):
            nursery.start_soon(appender, (first, second) if task % 2 else (second, first))
    assert await ledger.stream_version(first) == 120
    assert await ledger.stream_version(second) == 120


async def test_a_closed_ledger_refuses_to_work(target: Target) -> None:
    async with target.open() as ledger:
        pass
    with pytest.raises(LedgerClosedError):
        await ledger.append([StreamWrite(ACME.stream("runs", "r1"), 0, [new()])])
    with pytest.raises(LedgerClosedError):
        await ledger.read_playbook(ACME)


async def test_appends_still_queued_when_the_ledger_closes_are_committed(target: Target) -> None:
    results: list[int] = []
    async with target.open() as ledger, trio.open_nursery() as nursery:
        for number in range(32):

            async def append(number: int = number) -> None:
                [record] = await ledger.append([StreamWrite(ACME.stream("q", str(number)), 0, [new()])])
                results.append(record.position)

            nursery.start_soon(append)
    async with target.open() as reopened:
        for number in range(32):
            assert await reopened.stream_version(ACME.stream("q", str(number))) == 1
    assert results == [1] * 32
