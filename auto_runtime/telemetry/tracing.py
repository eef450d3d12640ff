"""Whether the server sends telemetry, and the one tracer it sends it with.

`install_tracing` runs once at start, before the Trio run: with `OTEL_EXPORTER_OTLP_ENDPOINT` set it installs the
OpenTelemetry SDK's tracer provider (a batch span processor and the OTLP/HTTP exporter) and sets `TRACING`;
unset, it installs nothing and `TRACING.tracer` stays None, so every span helper is a test of one attribute.

Concurrency: the batch processor keeps ended spans in a bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`, 2,048 by
default; past it, spans are dropped) and exports them from the SDK's own thread, so ending a span never blocks the
Trio thread. Each export is bounded by the exporter's timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, at most
`MAX_EXPORT_TIMEOUT_SECONDS`). `Installed.shutdown` runs after the Trio run ended: it exports what is queued,
within the processor's export timeout.

The other `OTEL_` settings the server reads, each from the environment only (the SDK reads them):
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS` (and `_TRACES_HEADERS`),
`OTEL_EXPORTER_OTLP_TIMEOUT` (and `_TRACES_TIMEOUT`), `OTEL_EXPORTER_OTLP_COMPRESSION`,
`OTEL_EXPORTER_OTLP_CERTIFICATE`, `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE`, `OTEL_EXPORTER_OTLP_CLIENT_KEY`,
`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`,
`OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_EXPORT_TIMEOUT`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`
and the `OTEL_ATTRIBUTE_*` and `OTEL_SPAN_*` limits.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.trace import Tracer

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

log = logging.getLogger("auto_runtime.telemetry")
INSTRUMENTATION_NAME = "auto_runtime"
SERVICE_NAME = "auto-runtime"
"""The service name unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` gives one."""
TRACES_PATH = "/v1/traces"
DEFAULT_EXPORT_TIMEOUT_SECONDS = 10.0
MAX_EXPORT_TIMEOUT_SECONDS = 30.0
TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


@dataclass
class Tracing:
    """The process's telemetry: `tracer` None when the server sends none; `content` records inputs, outputs,
    prompts, tool arguments and results as span attributes (`TELEMETRY_CONTENT=true`)."""

    tracer: Tracer | None = None
    content: bool = False


TRACING = Tracing()


@dataclass(frozen=True)
class Installed:
    provider: TracerProvider | None

    def shutdown(self) -> None:
        """Export what is queued and stop the processor's thread (after the Trio run; blocks within its bound)."""
        if self.provider is not None:
            self.provider.shutdown()
        TRACING.tracer = None
        TRACING.content = False


def traces_endpoint(endpoint: str, environ: Mapping[str, str]) -> str | None:
    """The URL spans are sent to: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` when set (None: the exporter reads it),
    else the endpoint with the traces path."""
    if environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return None
    return endpoint.rstrip("/") + TRACES_PATH


def shown_url(url: str) -> str:
    """The URL as the start-up line shows it: without any user name or password it holds."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def export_timeout(environ: Mapping[str, str]) -> float:
    """Seconds one export may take: the OTLP timeout setting (in seconds, as the Python SDK reads it), capped at
    `MAX_EXPORT_TIMEOUT_SECONDS`; 10 unless set."""
    for name in TIMEOUT_VARIABLES:
        text = environ.get(name, "").strip()
        if text:
            try:
                value = float(text)
            except ValueError:
                continue
            if value > 0:
                return min(value, MAX_EXPORT_TIMEOUT_SECONDS)
    return DEFAULT_EXPORT_TIMEOUT_SECONDS


def install_tracing(
    endpoint: str | None, content: bool, version: str, environ: Mapping[str, str] = os.environ
) -> Installed:
    """Install the SDK's tracer provider when `endpoint` is set; nothing otherwise."""
    if endpoint is None:
        return Installed(None)
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.version": version})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    url = traces_endpoint(endpoint, environ)
    exporter = OTLPSpanExporter(endpoint=url, timeout=export_timeout(environ))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    TRACING.tracer = provider.get_tracer(INSTRUMENTATION_NAME, version)
    TRACING.content = content
    where = shown_url(url) if url else "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    log.info("Telemetry: traces sent over OTLP/HTTP to %s, %s", where, "with content" if content else "without content")
    return Installed(provider)
