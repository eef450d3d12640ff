"""The spans the server sends, each a context manager placed around the one awaited call it covers.

A request's span (`asgi`) is the parent of its run's span; the run's span is the parent of the sandbox runs,
model calls, tool calls and ledger appends within the run. Every span is started on the Trio side, around the
awaiting call: a worker thread (the sandbox's, the SQLite writer's) never touches the context. A run is run in its
run id's actor, another task: `RunSpan.carrying` wraps the work handed to it so it runs in the request's context.

With no telemetry (`TRACING.tracer` None) each helper yields at once and records nothing, except the ledger
append's ids: an append records a fresh W3C pair then, so every event shows one.

Content (inputs, outputs, prompts, tool arguments and results) is set only when `TRACING.content` holds, in
attributes named `content.*`; `SpanNote.output` records the call's result the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from auto_runtime.metrics.calls import model_called, tool_called
from auto_runtime.telemetry.content import CONTENT_PREFIX, content_text
from auto_runtime.telemetry.ids import new_span_id, new_trace_id, span_id_text, trace_id_text
from auto_runtime.telemetry.request_context import REQUEST_ID
from auto_runtime.telemetry.tracing import TRACING

T = TypeVar("T")
APPEND_TRACE_FIELDS = ("trace_id", "span_id")
"""The metadata fields every record of one append carries alike: the append's trace and span."""
Attributes = Mapping[str, str | int | bool]


class SpanNote:
    """What the code inside a span may add to it: its result, as content."""

    def __init__(self, span: Span | None, output_name: str) -> None:
        self.span = span
        self.output_name = output_name

    def output(self, value: T) -> T:
        """Returns `value`, recorded as the span's output content when content is recorded."""
        if self.span is not None and TRACING.content:
            self.span.set_attribute(CONTENT_PREFIX + self.output_name, content_text(value))
        return value


QUIET = SpanNote(None, "output")


@contextmanager
def started_span(
    tracer: Tracer,
    name: str,
    attributes: Attributes,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: otel_context.Context | None = None,
) -> Iterator[Span]:
    """A span made current for the block. An error leaving the block marks it failed with the error's type only:
    an exception's text may quote content, so it is never recorded."""
    with tracer.start_as_current_span(
        name, context=parent, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as error:
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR))
            raise


@contextmanager
def _span(
    name: str,
    attributes: Attributes,
    content: Mapping[str, Any],
    output_name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    record_content: bool = True,
) -> Iterator[SpanNote]:
    tracer = TRACING.tracer
    if tracer is None:
        yield QUIET
        return
    with started_span(tracer, name, attributes, kind=kind) as span:
        if TRACING.content and record_content:
            for key, value in content.items():
                span.set_attribute(CONTENT_PREFIX + key, content_text(value))
        yield SpanNote(span if record_content else None, output_name)


class RunSpan(SpanNote):
    def carrying(self, run: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
        """`run`, to be awaited in another task (the run id's actor), made to run in this task's context: under the
        run's span and with the request's id; its result is the run's output content."""
        if self.span is None:
            return run
        captured = otel_context.get_current()
        request_id = REQUEST_ID.get()

        async def carried() -> T:
            token = otel_context.attach(captured)
            request_token = REQUEST_ID.set(request_id)
            try:
                return self.output(await run())
            finally:
                REQUEST_ID.reset(request_token)
                otel_context.detach(token)

        return carried


@contextmanager
def run_span(org: str, playbook: str, definition_type: str, name: str, run_id: str, value: Any) -> Iterator[RunSpan]:
    """A run of a definition, from its request (its input as content)."""
    with _span(
        "run",
        {
            "auto_runtime.org": org,
            "auto_runtime.playbook": playbook,
            "auto_runtime.definition.type": definition_type,
            "auto_runtime.definition.name": name,
            "auto_runtime.run_id": run_id,
        },
        {"input": value},
        "output",
    ) as note:
        yield RunSpan(note.span, "output")


@contextmanager
def model_call_span(provider: str, model: str, run_id: str | None, request: Any) -> Iterator[SpanNote]:
    """One call of a model (the request's prompt, instructions and tools as content; `output`: its answer)."""
    attributes: dict[str, str | int | bool] = {"gen_ai.provider.name": provider, "gen_ai.request.model": model}
    if run_id is not None:
        attributes["auto_runtime.run_id"] = run_id
    with _span("model call", attributes, {"prompt": request}, "answer", kind=SpanKind.CLIENT) as note:
        try:
            yield note
        except BaseException as error:
            model_called(provider, error)
            raise
        model_called(provider, None)


@contextmanager
def tool_call_span(
    server: str, tool: str, run_id: str, arguments: Any, *, record_content: bool = True
) -> Iterator[SpanNote]:
    """One call of a tool on a tool server (its arguments as content; `output`: its result). A tool whose entry
    records no content (`record_content: false`) has none in its span either."""
    attributes = {"gen_ai.tool.name": tool, "auto_runtime.tool.server": server, "auto_runtime.run_id": run_id}
    with _span(
        "tool call", attributes, {"arguments": arguments}, "result", kind=SpanKind.CLIENT, record_content=record_content
    ) as note:
        try:
            yield note
        except BaseException as error:
            tool_called(error)
            raise
        tool_called(None)


@contextmanager
def sandbox_run_span(kind: str) -> Iterator[SpanNote]:
    """One evaluation on a sandbox worker, around the awaiting call (the worker's thread sees no context)."""
    with _span("sandbox run", {"auto_runtime.sandbox.kind": kind}, {}, "output") as note:
        yield note


class StreamWriteLike(Protocol):
    @property
    def stream(self) -> str: ...

    @property
    def records(self) -> Sequence[object]: ...


@contextmanager
def ledger_append_span(writes: Sequence[StreamWriteLike]) -> Iterator[dict[str, str]]:
    """One ledger append; yields the `trace_id` and `span_id` its records' metadata carry: the span's, or, with no
    telemetry, a fresh pair for this append."""
    tracer = TRACING.tracer
    if tracer is None:
        yield dict(zip(APPEND_TRACE_FIELDS, (new_trace_id(), new_span_id()), strict=True))
        return
    attributes = {
        "auto_runtime.ledger.streams": len(writes),
        "auto_runtime.ledger.records": sum(len(write.records) for write in writes),
    }
    with started_span(tracer, "ledger append", attributes) as span:
        ids = span.get_span_context()
        yield dict(zip(APPEND_TRACE_FIELDS, (trace_id_text(ids.trace_id), span_id_text(ids.span_id)), strict=True))
