"""The outermost ASGI callable: every HTTP request gets its id here and, when the server sends telemetry, its span.

- The request id (`x-request-id`) is made here and kept in the request's context (`request_context`), so the
  apps inside answer with it and every log line written while the request is served carries it.
- With telemetry on, a request other than `/health` runs under a server span: the caller's trace continues when
  it sent a W3C `traceparent` (TraceContext propagator), else a new trace starts. The span is named by the
  operation once one is matched (`name_request`), and every response start gets `x-trace-id`, the span's trace id;
  `/health` gets neither span nor header.
- A `debug` log line ends each request (method, path, status), with the request's id and trace id. The path of
  the line and of the span is `logged_path`'s, without the secret of a connection link.
- With metrics on (`auto_runtime.metrics`), each request's duration is recorded by method, status and the
  operation it was matched to (`name_request` fills the holder the request's context carries).

With telemetry and metrics off, the request's only cost here is its id and one context variable.
"""

from __future__ import annotations

import logging
import time
import uuid

from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import Message, Receive, Scope, Send

from auto_runtime.asgi_messages import AsgiApp, header_values
from auto_runtime.metrics import METERING, request_served
from auto_runtime.telemetry.ids import trace_id_text
from auto_runtime.telemetry.logged_paths import logged_path
from auto_runtime.telemetry.request_context import REQUEST_ID, REQUEST_OPERATION, REQUEST_SPAN
from auto_runtime.telemetry.spans import started_span
from auto_runtime.telemetry.tracing import TRACING

log = logging.getLogger("auto_runtime.http")
UNTRACED_PATHS = frozenset({"/health"})
TRACE_HEADER = b"x-trace-id"


class _ScopeHeaders(Getter[Scope]):
    """Reads a request header of an ASGI scope for the propagator."""

    def get(self, carrier: Scope, key: str) -> list[str] | None:
        return header_values(carrier, key) or None

    def keys(self, carrier: Scope) -> list[str]:
        return [name.decode("latin-1") for name, _ in carrier.get("headers", [])]


PROPAGATOR = TraceContextTextMapPropagator()
SCOPE_HEADERS = _ScopeHeaders()


class RequestTelemetry:
    """Gives each HTTP request its id and, with telemetry on, its span and `x-trace-id` (module docstring)."""

    def __init__(self, app: AsgiApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = REQUEST_ID.set(str(uuid.uuid4()))
        try:
            if METERING.on:
                await self._measured(scope, receive, send)
            elif TRACING.tracer is not None and scope.get("path") not in UNTRACED_PATHS:
                await self._traced(scope, receive, send)
            elif log.isEnabledFor(logging.DEBUG):
                await self._logged(scope, receive, send)
            else:
                await self.app(scope, receive, send)
        finally:
            REQUEST_ID.reset(token)

    async def _served(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The three ways of `__call__` after metrics (kept inline there, so a request costs no frame more with
        metrics off)."""
        if TRACING.tracer is not None and scope.get("path") not in UNTRACED_PATHS:
            await self._traced(scope, receive, send)
        elif log.isEnabledFor(logging.DEBUG):
            await self._logged(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _measured(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serves the request and records its duration, status and operation."""
        holder: list[str] = []
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        operation_token = REQUEST_OPERATION.set(holder)
        started = time.perf_counter()
        try:
            await self._served(scope, receive, sending)
        finally:
            REQUEST_OPERATION.reset(operation_token)
            operation = holder[0] if holder else None
            seconds = time.perf_counter() - started
            request_served(scope.get("method", ""), scope.get("path", ""), status, operation, seconds)

    async def _logged(self, scope: Scope, receive: Receive, send: Send, trace_id: bytes | None = None) -> int:
        """Serves the request (adding `x-trace-id` when given) and logs its line; returns the status sent."""
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if trace_id is not None:
                    kept = [(n, v) for n, v in message.get("headers", []) if n.lower() != TRACE_HEADER]
                    message = {**message, "headers": [*kept, (TRACE_HEADER, trace_id)]}
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            method, path = scope.get("method", ""), logged_path(scope.get("path", ""))
            log.debug("%s %s %s", method, path, status, extra={"method": method, "path": path, "status": status})
        return status

    async def _traced(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer = TRACING.tracer
        assert tracer is not None
        method: str = scope.get("method", "GET")
        parent = PROPAGATOR.extract(scope, getter=SCOPE_HEADERS)
        attributes = {
            "http.request.method": method,
            "url.path": logged_path(scope.get("path", "")),
            "auto_runtime.request_id": REQUEST_ID.get() or "",
        }
        with started_span(tracer, method, attributes, kind=SpanKind.SERVER, parent=parent) as span:
            span_token = REQUEST_SPAN.set(span)
            try:
                status = await self._logged(
                    scope, receive, send, trace_id_text(span.get_span_context().trace_id).encode("ascii")
                )
            finally:
                REQUEST_SPAN.reset(span_token)
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR))
