"""What the current request is, for the log lines and the spans written while it is served.

Both values live in context variables, set by the outermost ASGI callable (`telemetry.asgi`) in the request's
task: Trio copies a task's context into the tasks it starts, so the request's own tasks (Quart's handler, the MCP
SDK's per-request server) see them. An actor's task or a worker thread does not; work handed there carries the
context explicitly (`spans.RunSpan.carrying`).
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar

from opentelemetry.trace import Span, get_current_span

from auto_runtime.telemetry.ids import span_id_text, trace_id_text

REQUEST_ID: ContextVar[str | None] = ContextVar("auto_runtime_request_id", default=None)
REQUEST_SPAN: ContextVar[Span | None] = ContextVar("auto_runtime_request_span", default=None)
REQUEST_OPERATION: ContextVar[list[str] | None] = ContextVar("auto_runtime_request_operation", default=None)
"""While metrics are on: a holder of the operation the request was matched to, set in the request's task and
filled in by `name_request` in whichever task copied the context (a list, so the outer task sees it)."""


def current_request_id() -> str:
    """The request's id (its `x-request-id`): the one the outer callable gave it, else a new one (an app served
    without the outer callable, as in the in-process tests; the caller keeps it for the request)."""
    value = REQUEST_ID.get()
    return value if value is not None else str(uuid.uuid4())


def name_request(operation: str) -> None:
    """Names the request's span by the operation it was matched to, and its metrics (nothing when the server
    sends no telemetry and measures nothing)."""
    holder = REQUEST_OPERATION.get()
    if holder is not None:
        holder.append(operation)
    span = REQUEST_SPAN.get()
    if span is not None:
        span.update_name(operation)
        span.set_attribute("auto_runtime.operation", operation)


def log_context() -> dict[str, str]:
    """The fields a log line written now carries: `request_id` within a request, `trace_id` and `span_id` within a
    span the server sends."""
    fields: dict[str, str] = {}
    request_id = REQUEST_ID.get()
    if request_id is not None:
        fields["request_id"] = request_id
    ids = get_current_span().get_span_context()
    if ids.is_valid:
        fields["trace_id"] = trace_id_text(ids.trace_id)
        fields["span_id"] = span_id_text(ids.span_id)
    return fields
