"""A playbook's records in pages, as the seeds' "Paging" says (every store)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
import trio

from auto_runtime.ledger import (
    MAX_LOOKED_AT,
    InvalidCursor,
    Ledger,
    NewRecord,
    Order,
    Page,
    PlaybookScope,
    Record,
    StreamWrite,
)

ACME = PlaybookScope("acme", "finance")
OTHER = PlaybookScope("acme", "sales")


async def fill(ledger: Ledger, count: int, kind: str = "x", scope: PlaybookScope = ACME, **metadata: str) -> None:
    for start in range(0, count, 64):
        batch = [NewRecord(kind, {"n": start + i}, dict(metadata)) for i in range(min(64, count - start))]
        await ledger.append([StreamWrite(scope.stream("events", f"{kind}-{start}"), 0, batch)])


async def read_all(
    ledger: Ledger,
    order: Order = "desc",
    types: set[str] | None = None,
    since: datetime | None = None,
    correlation_id: str | None = None,
    limit: int = 20,
) -> tuple[list[Record], list[Page]]:
    pages: list[Page] = []
    cursor: str | None = None
    while True:
        page = await ledger.read_playbook(ACME, order, types, since, correlation_id, limit, cursor)
        pages.append(page)
        if not page.has_more:
            assert page.next_cursor is None
            return [r for p in pages for r in p.records], pages
        assert page.next_cursor is not None
        cursor = page.next_cursor


async def test_newest_first_by_default_with_twenty_to_a_page(ledger: Ledger) -> None:
    await fill(ledger, 45)
    first = await ledger.read_playbook(ACME)
    assert len(first.records) == 20
    assert first.has_more and first.next_cursor
    assert [r.data["n"] for r in first.records[:2]] == [44, 43]
    records, pages = await read_all(ledger)
    assert [len(p.records) for p in pages] == [20, 20, 5]
    assert [r.data["n"] for r in records] == list(range(44, -1, -1))


async def test_oldest_first_reads_every_record_once(ledger: Ledger) -> None:
    await fill(ledger, 130)
    await fill(ledger, 10, scope=OTHER)
    records, pages = await read_all(ledger, order="asc", limit=100)
    assert [r.data["n"] for r in records] == list(range(130))
    assert [len(p.records) for p in pages] == [100, 30]


async def test_a_page_that_ends_the_history_exactly_says_there_is_no_more(ledger: Ledger) -> None:
    await fill(ledger, 20)
    page = await ledger.read_playbook(ACME, order="asc")
    assert len(page.records) == 20
    assert (page.has_more, page.next_cursor) == (False, None)


async def test_an_empty_playbook_has_an_empty_last_page(ledger: Ledger) -> None:
    page = await ledger.read_playbook(ACME)
    assert page == Page([], False, None)


@pytest.mark.parametrize("limit", [0, 101, -1])
async def test_a_limit_outside_one_to_a_hundred_is_refused(ledger: Ledger, limit: int) -> None:
    with pytest.raises(ValueError):
        await ledger.read_playbook(ACME, limit=limit)


async def test_a_type_filter_looks_at_no_more_than_a_thousand_records(ledger: Ledger) -> None:
    await fill(ledger, 1, kind="wanted")
    await fill(ledger, MAX_LOOKED_AT + 10, kind="noise")
    first = await ledger.read_playbook(ACME, types={"wanted"})
    assert first.records == []
    assert first.has_more and first.next_cursor
    second = await ledger.read_playbook(ACME, types={"wanted"}, cursor=first.next_cursor)
    assert [r.type for r in second.records] == ["wanted"]
    assert (second.has_more, second.next_cursor) == (False, None)


async def test_a_type_filter_keeps_only_those_types(ledger: Ledger) -> None:
    await fill(ledger, 5, kind="a")
    await fill(ledger, 5, kind="b")
    await fill(ledger, 5, kind="c")
    records, _ = await read_all(ledger, types={"a", "c"}, limit=3, order="asc")
    assert [r.type for r in records] == ["a"] * 5 + ["c"] * 5


async def test_since_keeps_what_was_recorded_from_then_on(ledger: Ledger) -> None:
    await fill(ledger, 3, kind="old")
    await trio.sleep(0.01)
    [marker] = await ledger.append([StreamWrite(ACME.stream("m"), 0, [NewRecord("marker", {})])])
    await fill(ledger, 3, kind="new")
    since = marker.recorded_at
    for order in ("asc", "desc"):
        records, _ = await read_all(ledger, since=since, order=order)
        assert sorted(r.type for r in records) == ["marker", "new", "new", "new"]
    future = datetime.now(UTC) + timedelta(days=1)
    assert (await ledger.read_playbook(ACME, since=future)).records == []


async def test_a_run_tree_is_read_by_its_correlation_id(ledger: Ledger) -> None:
    await fill(ledger, 5, kind="mine", correlation_id="run-1")
    await fill(ledger, 5, kind="theirs", correlation_id="run-2")
    await fill(ledger, 5, kind="none")
    records, pages = await read_all(ledger, correlation_id="run-1", limit=2, order="asc")
    assert [r.type for r in records] == ["mine"] * 5
    assert [len(p.records) for p in pages] == [2, 2, 1]
    only = await ledger.read_playbook(ACME, correlation_id="run-2", types={"none"})
    assert only == Page([], False, None)


async def test_a_page_stops_after_loading_four_mebibytes(ledger: Ledger) -> None:
    blob = "x" * (1024 * 1024)
    for number in range(6):
        await ledger.append([StreamWrite(ACME.stream("big", str(number)), 0, [NewRecord("big", {"blob": blob})])])
    records, pages = await read_all(ledger, order="asc")
    assert [len(p.records) for p in pages] == [4, 2]
    assert len(records) == 6


async def test_a_cursor_from_another_playbook_is_refused(ledger: Ledger) -> None:
    await fill(ledger, 30)
    await fill(ledger, 30, scope=OTHER)
    foreign = (await ledger.read_playbook(OTHER)).next_cursor
    assert foreign is not None
    with pytest.raises(InvalidCursor):
        await ledger.read_playbook(ACME, cursor=foreign)


async def test_a_cursor_for_the_other_order_is_refused(ledger: Ledger) -> None:
    await fill(ledger, 30)
    cursor = (await ledger.read_playbook(ACME, order="asc")).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursor):
        await ledger.read_playbook(ACME, order="desc", cursor=cursor)


def forged(payload: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor",
        "!!!!",
        forged([1, 2]),
        forged({"s": ACME.key, "o": "desc"}),
        forged({"s": ACME.key, "o": "desc", "k": [1]}),
        forged({"s": ACME.key, "o": "desc", "k": ["1", 2]}),
        forged({"s": ACME.key, "o": "desc", "k": [True, 2]}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
async def test_a_malformed_cursor_is_refused(ledger: Ledger, cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        await ledger.read_playbook(ACME, cursor=cursor)
