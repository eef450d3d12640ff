"""`install_tracing`: nothing without an endpoint; the endpoint and timeout it sends with."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from auto_runtime.telemetry import TRACING, install_tracing
from auto_runtime.telemetry.tracing import MAX_EXPORT_TIMEOUT_SECONDS, export_timeout, shown_url, traces_endpoint


def test_without_an_endpoint_no_tracer_provider_is_installed() -> None:
    installed = install_tracing(None, True, "0.1.0", {})
    assert installed.provider is None
    assert TRACING.tracer is None and TRACING.content is False
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)
    installed.shutdown()


def test_spans_go_to_the_traces_path_of_the_endpoint_unless_the_traces_endpoint_is_set() -> None:
    assert traces_endpoint("http://collector:4318", {}) == "http://collector:4318/v1/traces"
    assert traces_endpoint("http://collector:4318/", {}) == "http://collector:4318/v1/traces"
    assert traces_endpoint("http://collector:4318", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/t"}) is None


def test_an_export_s_timeout_is_bounded() -> None:
    assert export_timeout({}) == 10.0
    assert export_timeout({"OTEL_EXPORTER_OTLP_TIMEOUT": "2.5"}) == 2.5
    assert export_timeout({"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "4", "OTEL_EXPORTER_OTLP_TIMEOUT": "2"}) == 4.0
    assert export_timeout({"OTEL_EXPORTER_OTLP_TIMEOUT": "100000"}) == MAX_EXPORT_TIMEOUT_SECONDS
    assert export_timeout({"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}) == 10.0


def test_the_start_up_line_shows_the_endpoint_without_credentials() -> None:
    assert shown_url("https://user:secret@collector:4318/v1/traces?k=v") == "https://collector:4318/v1/traces"
    assert shown_url("http://[::1]:4318/v1/traces") == "http://[::1]:4318/v1/traces"
