"""Telemetry: traces over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, the request's id and trace id in the log
lines, and the trace and span ids every ledger append records.

The public face: `install_tracing` (at start), the span context managers placed around the calls they cover,
`current_request_id` and `name_request` for the apps, and `log_context` and `logged_path` for the log lines. The
rooms below the transports (the ledger, the sandbox, the models, the tools) import this face, so it holds no
transport code: the outermost ASGI callable is `auto_runtime.telemetry.asgi.RequestTelemetry`, which only the
composition root imports."""

from auto_runtime.telemetry.logged_paths import logged_path
from auto_runtime.telemetry.request_context import current_request_id, log_context, name_request
from auto_runtime.telemetry.spans import (
    APPEND_TRACE_FIELDS,
    RunSpan,
    SpanNote,
    ledger_append_span,
    model_call_span,
    run_span,
    sandbox_run_span,
    tool_call_span,
)
from auto_runtime.telemetry.tracing import TRACING, Installed, install_tracing

__all__ = [
    "APPEND_TRACE_FIELDS",
    "TRACING",
    "Installed",
    "RunSpan",
    "SpanNote",
    "current_request_id",
    "install_tracing",
    "ledger_append_span",
    "log_context",
    "logged_path",
    "model_call_span",
    "name_request",
    "run_span",
    "sandbox_run_span",
    "tool_call_span",
]
