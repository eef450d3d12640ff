"""A tracer of the test's own, for the in-process telemetry tests: an SDK tracer provider that keeps its spans in
memory, made the process's `TRACING` tracer for one test and put back after (the global provider stays unset)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from auto_runtime.telemetry import TRACING


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    kept = (TRACING.tracer, TRACING.content)
    TRACING.tracer, TRACING.content = provider.get_tracer("tests"), False
    try:
        yield exporter
    finally:
        TRACING.tracer, TRACING.content = kept
        provider.shutdown()
