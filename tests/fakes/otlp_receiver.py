"""A local OTLP/HTTP trace and metrics receiver, a real process for the telemetry tests.

    python -m tests.fakes.otlp_receiver --port 0 --spans FILE

It takes `POST /v1/traces` with an `ExportTraceServiceRequest` in protobuf (gzip-compressed or not), decodes it
with `opentelemetry-proto`, and appends one JSON line per span to FILE: `trace_id`, `span_id`, `parent_span_id`
(hex; "" for a root), `name`, `kind` (the protobuf enum's name), `attributes` (name to value) and `service`
(the resource's `service.name`). It answers an empty `ExportTraceServiceResponse`. It takes `POST /v1/metrics`
with an `ExportMetricsServiceRequest` the same way, and appends one JSON line per metric to the file beside
FILE named `metrics_file_of(FILE)`: `name`, `unit` and `service`. Anything else is `404`.

`start_otlp_receiver` starts it and waits for its `listening on <url>` line; `OtlpReceiver.wait_for_spans` reads
the file until a condition holds, within a bound.
"""

from __future__ import annotations

import argparse
import gzip
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.fakes.asgi_serving import serve_on_loopback

ROOT = Path(__file__).resolve().parents[2]
START_LINE_TIMEOUT_SECONDS = 30.0
POLL_SECONDS = 0.05


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def span_lines(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    """One JSON-ready entry per span of the request."""
    lines = []
    for resource_spans in request.resource_spans:
        resource = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            lines.extend(_span_line(span, resource) for span in scope_spans.spans)
    return lines


def _span_line(span: Span, resource: dict[str, Any]) -> dict[str, Any]:
    return {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "name": span.name,
        "kind": Span.SpanKind.Name(span.kind),
        "attributes": {item.key: _value(item.value) for item in span.attributes},
        "service": resource.get("service.name"),
    }


def metrics_file_of(spans_file: Path) -> Path:
    return spans_file.with_name(spans_file.stem + ".metrics.jsonl")


def metric_lines(request: ExportMetricsServiceRequest) -> list[dict[str, Any]]:
    lines = []
    for resource_metrics in request.resource_metrics:
        resource = {item.key: _value(item.value) for item in resource_metrics.resource.attributes}
        for scope_metrics in resource_metrics.scope_metrics:
            lines.extend(
                {"name": metric.name, "unit": metric.unit, "service": resource.get("service.name")}
                for metric in scope_metrics.metrics
            )
    return lines


async def _body(request: Request) -> bytes:
    body = await request.body()
    if request.headers.get("content-encoding", "").lower() == "gzip":
        body = gzip.decompress(body)
    return body


def build(spans_file: Path) -> Starlette:
    async def metrics(request: Request) -> Response:
        message = ExportMetricsServiceRequest()
        message.ParseFromString(await _body(request))
        with metrics_file_of(spans_file).open("a", encoding="utf-8") as out:
            for line in metric_lines(message):
                out.write(json.dumps(line) + "\n")
        return Response(ExportMetricsServiceResponse().SerializeToString(), media_type="application/x-protobuf")

    async def traces(request: Request) -> Response:
        body = await _body(request)
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        with spans_file.open("a", encoding="utf-8") as out:
            for line in span_lines(message):
                out.write(json.dumps(line) + "\n")
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")

    return Starlette(
        routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/v1/metrics", metrics, methods=["POST"])]
    )


@dataclass
class OtlpReceiver:
    process: subprocess.Popen[str]
    origin: str
    spans_file: Path

    def spans(self) -> list[dict[str, Any]]:
        if not self.spans_file.exists():
            return []
        spans = []
        for line in self.spans_file.read_text(encoding="utf-8").splitlines():
            try:
                spans.append(json.loads(line))
            except ValueError:
                break  # the last line, still being written
        return spans

    def metric_names(self) -> set[str]:
        """The names of every metric received so far."""
        path = metrics_file_of(self.spans_file)
        if not path.exists():
            return set()
        names = set()
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                names.add(json.loads(line)["name"])
            except ValueError:
                break  # the last line, still being written
        return names

    def wait_for_spans(
        self, condition: Callable[[list[dict[str, Any]]], bool], bound_seconds: float = 30.0
    ) -> list[dict[str, Any]]:
        """The spans received so far, once `condition` holds of them; fails when it does not within the bound."""
        deadline = time.monotonic() + bound_seconds
        while True:
            spans = self.spans()
            if condition(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"the expected spans did not arrive within {bound_seconds} s; got {spans}")
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_otlp_receiver(spans_file: Path) -> OtlpReceiver:
    """`python -m tests.fakes.otlp_receiver --port 0 --spans FILE`, once it listens."""
    command = [sys.executable, "-m", "tests.fakes.otlp_receiver", "--port", "0", "--spans", str(spans_file)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        process.wait()
        process.stdout.close()
        raise AssertionError(f"the OTLP receiver did not start: {line!r}")
    return OtlpReceiver(process, line.removeprefix("listening on ").strip(), spans_file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A local OTLP/HTTP trace receiver for tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--spans", type=Path, required=True)
    arguments = parser.parse_args(argv)
    serve_on_loopback(build(arguments.spans), arguments.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
