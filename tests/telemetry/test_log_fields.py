"""The log lines carry the request's id and, within a span the server sends, its trace and span ids."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from auto_runtime.logs import configure_logging
from auto_runtime.telemetry import TRACING
from auto_runtime.telemetry.request_context import REQUEST_ID

log = logging.getLogger("auto_runtime.test")


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    out = io.StringIO()
    configure_logging("json", "info", out)
    yield out
    root.handlers[:] = handlers
    root.setLevel(level)


def entries(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_outside_a_request_a_line_has_no_context_fields(stream: io.StringIO) -> None:
    log.info("idle")
    [entry] = entries(stream)
    assert not {"request_id", "trace_id", "span_id"} & set(entry)


def test_within_a_request_a_line_carries_its_id_and_the_call_s_own_field_wins(stream: io.StringIO) -> None:
    token = REQUEST_ID.set("request-1")
    try:
        log.info("serving")
        log.info("given", extra={"request_id": "given-2"})
    finally:
        REQUEST_ID.reset(token)
    first, second = entries(stream)
    assert first["request_id"] == "request-1" and "trace_id" not in first
    assert second["request_id"] == "given-2"


def test_within_a_span_a_line_carries_its_trace_and_span(stream: io.StringIO, exported: InMemorySpanExporter) -> None:
    assert TRACING.tracer is not None
    with TRACING.tracer.start_as_current_span("work") as span:
        log.info("inside")
    context = span.get_span_context()
    [entry] = entries(stream)
    assert (entry["trace_id"], entry["span_id"]) == (f"{context.trace_id:032x}", f"{context.span_id:016x}")


def test_the_pretty_format_shows_them_too() -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    out = io.StringIO()
    try:
        configure_logging("pretty", "info", out)
        token = REQUEST_ID.set("request-3")
        try:
            log.info("serving")
        finally:
            REQUEST_ID.reset(token)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert "request_id='request-3'" in out.getvalue()
