"""Installing the metrics at start: the SDK's meter provider with a Prometheus reader (`METRICS=on`, scraped at
`GET /metrics`) and, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, a periodic OTLP/HTTP reader beside the traces.
Neither: nothing is installed and every helper of this room returns at once (`state`).

The Prometheus reader keeps nothing between scrapes: the SDK aggregates in memory (bounded by the
instruments' bounded attribute sets) and the reader turns it into prometheus-client's families at each scrape,
into the process's default registry (which also holds prometheus-client's process and platform collectors).
The OTLP reader exports every `OTEL_METRIC_EXPORT_INTERVAL` ms (60,000 unless set) from the SDK's own thread,
each export bounded by the exporter's timeout; `Installed.shutdown` exports what is left after the Trio run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from auto_runtime.metrics import actors, model_processes
from auto_runtime.metrics.runs import forget_starts
from auto_runtime.metrics.state import INSTRUMENTATION_NAME, METERING

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader

log = logging.getLogger("auto_runtime.metrics")
METRICS_PATH = "/v1/metrics"


@dataclass(frozen=True)
class Installed:
    provider: MeterProvider | None
    scraped: bool
    """Whether `GET /metrics` serves the metrics (`METRICS=on`)."""

    def shutdown(self) -> None:
        """Export what is left over OTLP and stop the readers (after the Trio run; blocks within its bound)."""
        METERING.stop()
        forget_starts()
        if self.provider is not None:
            self.provider.shutdown()


def metrics_endpoint(endpoint: str, environ: Mapping[str, str]) -> str | None:
    """`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` when set (None: the exporter reads it), else the endpoint's path."""
    if environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"):
        return None
    return endpoint.rstrip("/") + METRICS_PATH


def install_metrics(
    scraped: bool, endpoint: str | None, version: str, environ: Mapping[str, str] = os.environ
) -> Installed:
    """Install the SDK's meter provider when `scraped` (METRICS=on) or `endpoint` is set; nothing otherwise."""
    if not scraped and endpoint is None:
        return Installed(None, False)
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource

    from auto_runtime.telemetry.tracing import SERVICE_NAME, export_timeout

    readers: list[MetricReader] = []
    if scraped:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        readers.append(PrometheusMetricReader())
    if endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        exporter = OTLPMetricExporter(endpoint=metrics_endpoint(endpoint, environ), timeout=export_timeout(environ))
        readers.append(PeriodicExportingMetricReader(exporter))
    resource = Resource.create({"service.version": version})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = MeterProvider(metric_readers=readers, resource=resource)
    meter = provider.get_meter(INSTRUMENTATION_NAME, version)
    METERING.start(meter)
    actors.observe(meter)
    model_processes.observe(meter)
    log.info(
        "Metrics: %s",
        " and ".join(
            part
            for part, wanted in (("served at GET /metrics", scraped), ("sent over OTLP/HTTP", endpoint is not None))
            if wanted
        ),
    )
    return Installed(provider, scraped)
