"""The span helpers in process, with a tracer that keeps its spans in memory (`conftest.exported`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from auto_runtime.telemetry import TRACING, run_span, sandbox_run_span, tool_call_span
from auto_runtime.telemetry.content import MAX_CONTENT_CHARACTERS
from auto_runtime.telemetry.request_context import REQUEST_ID

Work = Callable[[], Awaitable[Any]]


async def carried_into_another_task(work: Work) -> Any:
    """Awaits `work` in a task started before the caller's span, as a run id's actor runs a request's run."""
    send, receive = trio.open_memory_channel[Work](1)
    answers, answer = trio.open_memory_channel[Any](1)

    async def actor() -> None:
        async for job in receive:
            await answers.send(await job())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor)
        with run_span("acme", "finance", "computation", "add", "r1", {"a": 1}) as span:
            await send.send(span.carrying(work))
            result = await answer.receive()
        nursery.cancel_scope.cancel()
    return result


async def sandbox_work() -> str:
    with sandbox_run_span("run"):
        return REQUEST_ID.get() or ""


async def test_work_carried_into_another_task_runs_under_the_run_span(exported: InMemorySpanExporter) -> None:
    token = REQUEST_ID.set("request-9")
    try:
        seen = await carried_into_another_task(sandbox_work)
    finally:
        REQUEST_ID.reset(token)
    spans = {span.name: span for span in exported.get_finished_spans()}
    run, sandbox = spans["run"], spans["sandbox run"]
    assert sandbox.parent is not None and run.context is not None
    assert sandbox.parent.span_id == run.context.span_id
    assert seen == "request-9", "the request's id goes with the work, for its log lines"


async def test_work_not_carried_would_start_a_trace_of_its_own(exported: InMemorySpanExporter) -> None:
    """What `carrying` is for: the actor's task does not share the request's context."""
    send, receive = trio.open_memory_channel[Work](1)
    done = trio.Event()

    async def actor() -> None:
        async for job in receive:
            await job()
            done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor)
        with run_span("acme", "finance", "computation", "add", "r1", {}):
            await send.send(sandbox_work)
            await done.wait()
        nursery.cancel_scope.cancel()
    spans = {span.name: span for span in exported.get_finished_spans()}
    assert spans["sandbox run"].parent is None


def test_a_failure_marks_the_span_with_its_type_and_never_its_text(exported: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), tool_call_span("helpdesk", "get_customer", "r1", {"id": "cust-zq"}):
        raise ValueError("the customer cust-zq said something private")
    [span] = exported.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "ValueError"
    assert not span.events
    assert "private" not in span.to_json() and "cust-zq" not in span.to_json()


def test_content_is_recorded_only_when_asked_and_cut_to_its_bound(exported: InMemorySpanExporter) -> None:
    with tool_call_span("helpdesk", "get_customer", "r1", {"id": "cust-zq"}) as note:
        note.output({"plan": "pro"})
    TRACING.content = True
    with tool_call_span("helpdesk", "get_customer", "r1", {"text": "x" * 100_000}) as note:
        note.output({"plan": "pro"})
    with tool_call_span("helpdesk", "get_customer", "r1", {"id": "c-8"}, record_content=False) as note:
        note.output({"plan": "pro"})
    quiet, recorded, unrecorded = exported.get_finished_spans()
    assert quiet.attributes is not None and not [k for k in quiet.attributes if k.startswith("content.")]
    assert recorded.attributes is not None
    arguments = recorded.attributes["content.arguments"]
    assert isinstance(arguments, str) and len(arguments) == MAX_CONTENT_CHARACTERS and arguments.endswith("…")
    assert recorded.attributes["content.result"] == '{"plan": "pro"}'
    assert unrecorded.attributes is not None and not [k for k in unrecorded.attributes if k.startswith("content.")]
