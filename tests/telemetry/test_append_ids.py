"""Every append records one trace and span id pair in the metadata of each of its records, on both stores: the
append span's ids with telemetry on, a fresh W3C pair per append with it off."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, StreamWrite, open_ledger
from auto_runtime.telemetry import TRACING
from tests.postgres_support import fresh_database

SCOPE = PlaybookScope("acme", "finance")
TRACE_ID = re.compile(r"[0-9a-f]{32}")
SPAN_ID = re.compile(r"[0-9a-f]{16}")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Ledger]:
    with ExitStack() as stack:
        url = stack.enter_context(fresh_database("telemetry_test")) if request.param == "postgres" else None
        async with open_ledger(None if url else tmp_path / "ledger.db", url) as opened:
            yield opened


def two_streams(run: str) -> list[StreamWrite]:
    return [
        StreamWrite(SCOPE.stream("runs", run), 0, [NewRecord("a", {}), NewRecord("b", {}, {"trace_id": "stale"})]),
        StreamWrite(SCOPE.stream("other", run), 0, [NewRecord("c", {})]),
    ]


def pairs(records: list[object]) -> set[tuple[str, str]]:
    return {(r.metadata["trace_id"], r.metadata["span_id"]) for r in records}  # type: ignore[attr-defined]


async def test_with_telemetry_off_each_append_records_a_fresh_pair_shared_by_its_records(ledger: Ledger) -> None:
    assert TRACING.tracer is None
    first = await ledger.append(two_streams("r1"))
    second = await ledger.append(two_streams("r2"))
    [(trace_id, span_id)] = pairs(first)
    assert TRACE_ID.fullmatch(trace_id) and SPAN_ID.fullmatch(span_id)
    assert len(pairs(second)) == 1 and pairs(second) != pairs(first)
    read = await ledger.read_stream(SCOPE.stream("runs", "r1"))
    assert pairs(read) == pairs(first), "the pair is stored, not made when read"


async def test_with_telemetry_on_the_records_carry_the_append_span_s_ids(
    ledger: Ledger, exported: InMemorySpanExporter
) -> None:
    appended = await ledger.append(two_streams("r1"))
    [span] = [span for span in exported.get_finished_spans() if span.name == "ledger append"]
    assert span.context is not None
    assert pairs(appended) == {(f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}")}
    assert span.attributes == {"auto_runtime.ledger.streams": 2, "auto_runtime.ledger.records": 3}
