"""What the metrics cost the server: `/health` and a computation run's server CPU a request with `METRICS` off,
with it on, and (with `--server-path`) on another tree, such as this one without the metrics (below). Prints;
asserts nothing.

    python -m benchmarks.metrics_cost [--rounds N] [--seconds S] [--connections N] [--processes N]
                                      [--server-path DIR ...] [--scrapes N]

The servers and the load are `benchmarks.http_routes`'s (raw keep-alive sockets from several processes; the
server's CPU from `/proc`, every thread). Each round measures every route on every server in turn, so the
figures of a round are moments apart; printed: the median rate and CPU a request over the rounds, and the
median of each round's CPU ratio to the server with metrics off. `--scrapes` then times that many scrapes of
`/metrics` on the server with metrics on (the Prometheus text built from the SDK's aggregation).

The server without the metrics: the commit before them (`git archive 1d51ce0^ | tar -x -C /tmp/before`) also
lacks everything that landed since (the snapshot sandbox of issue 31 changed what a computation run costs),
so take this tree and the metrics' own commits back out of it instead:

    git archive HEAD | tar -x -C /tmp/before && cp -a auto_runtime/sandbox/built /tmp/before/auto_runtime/sandbox/
    for commit in $(git log --format=%h 1d51ce0^..HEAD -- auto_runtime/metrics); do   # newest first
        git show --format= $commit -- auto_runtime | (cd /tmp/before && patch -R -p1 -f)
    done

then fix by hand what a later commit moved (the hunks `patch` rejects: imports in `telemetry/asgi.py` and
`functions/prediction/model_pool.py`), check that nothing under `/tmp/before/auto_runtime` still names
`auto_runtime.metrics`, and pass `--server-path /tmp/before`.

First, in this process (`--recording-only` stops there): what recording one request's duration costs through
the OpenTelemetry SDK (what the server uses) and through prometheus-client's own histogram (the other way the
issue named), with the same labels and buckets; the no-op meter's cost (metrics off, if a helper skipped its
test); and the time to turn 200 labelled series into the Prometheus text both ways.
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
from opentelemetry.metrics import NoOpMeter
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client import Histogram as PrometheusHistogram

from auto_runtime.metrics.instruments import SECONDS
from benchmarks.http_routes import ROUTES, Measurements, Server, measure, start_runtime

MEASURED = ("GET /health", "run_definition (computation)")
OFF = "metrics off"


def report(rounds: Measurements, servers: Sequence[Server], routes: Sequence[str]) -> None:
    for route in routes:
        print(f"{route}:")
        floor = rounds[(OFF, route)]
        for server in servers:
            own = rounds[(server.label, route)]
            rate = statistics.median(r for r, _ in own)
            cpu = statistics.median(c for _, c in own)
            ratio = statistics.median(c / f for (_, f), (_, c) in zip(floor, own, strict=True))
            print(f"  {server.label:<36} {rate:8.0f} requests/s {cpu * 1e6:7.0f} us CPU a request  {ratio:5.2f}x off")


def scrape_cost(server: Server, scrapes: int) -> None:
    timings = []
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30.0) as client:
        size = 0
        for _ in range(scrapes):
            started = time.perf_counter()
            response = client.get("/metrics")
            timings.append(time.perf_counter() - started)
            response.raise_for_status()
            size = len(response.content)
    print(
        f"a scrape of /metrics: median {statistics.median(timings) * 1e3:.2f} ms over {scrapes} scrapes, "
        f"{size:,} bytes of text"
    )


SERIES = 200
LABELS = {"http.request.method": "POST", "http.response.status_code": 200, "auto_runtime.operation": "run_definition"}


def _best(call: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=5)) / number


def recording() -> None:
    """Microseconds a record, and milliseconds a text of `SERIES` series, the OpenTelemetry SDK's way and
    prometheus-client's, in this process (best of 5)."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader

    registry = CollectorRegistry()
    reader = PrometheusMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    histogram = provider.get_meter("bench").create_histogram(
        "http.server.request.duration", unit="s", explicit_bucket_boundaries_advisory=SECONDS
    )
    plain = PrometheusHistogram(
        "http_server_request_duration_seconds",
        "",
        ["method", "status", "operation"],
        buckets=SECONDS,
        registry=registry,
    )
    noop = NoOpMeter("bench").create_histogram("http.server.request.duration")
    labels = ("POST", "200", "run_definition")
    print("recording one request's duration, in this process (best of 5):")
    print(f"  OpenTelemetry SDK histogram      {_best(lambda: histogram.record(0.003, LABELS), 20_000) * 1e6:6.2f} us")
    observe = plain.labels(*labels).observe
    print(f"  prometheus-client histogram      {_best(lambda: observe(0.003), 20_000) * 1e6:6.2f} us")
    looked_up = _best(lambda: plain.labels(*labels).observe(0.003), 20_000)
    print(f"  (with its labels looked up)      {looked_up * 1e6:6.2f} us")
    print(f"  no-op meter (metrics off)        {_best(lambda: noop.record(0.003, LABELS), 20_000) * 1e6:6.2f} us")
    for number in range(SERIES):
        histogram.record(0.003, {**LABELS, "auto_runtime.operation": f"operation-{number}"})
        plain.labels("POST", "200", f"operation-{number}").observe(0.003)
    from prometheus_client import REGISTRY

    print(f"the Prometheus text of {SERIES} histogram series:")
    print(f"  OpenTelemetry exporter           {_best(lambda: generate_latest(REGISTRY), 20) * 1e3:6.2f} ms")
    print(f"  prometheus-client                {_best(lambda: generate_latest(registry), 20) * 1e3:6.2f} ms")
    provider.shutdown()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--server-path", action="append", default=[], help="another checkout to serve from")
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--recording-only", action="store_true", help="measure in this process only")
    arguments = parser.parse_args(argv)
    recording()
    if arguments.recording_only:
        return
    here = str(Path(__file__).resolve().parent.parent)
    routes = [route for route in ROUTES if route.name in MEASURED]
    servers: list[Server] = []
    try:
        servers.append(start_runtime(OFF, here, None, {}))
        servers.append(start_runtime("metrics on", here, None, {"METRICS": "on"}))
        servers.extend(start_runtime(f"server at {path}", path, None, {}) for path in arguments.server_path)
        print(
            f"{arguments.processes} load processes x {arguments.connections} connections, {arguments.seconds:g} s "
            f"a measurement, median of {arguments.rounds} rounds (the machine may be shared)"
        )
        report(measure(servers, routes, arguments), servers, MEASURED)
        if arguments.scrapes > 0:
            scrape_cost(servers[1], arguments.scrapes)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
