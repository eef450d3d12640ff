"""What the metrics cost the server: `/health` and a computation run's server CPU a request with `METRICS` off,
with it on, and (with `--server-path`) on another checkout, such as the commit before the metrics. Prints;
asserts nothing.

    python -m benchmarks.metrics_cost [--rounds N] [--seconds S] [--connections N] [--processes N]
                                      [--server-path DIR ...] [--scrapes N]

The servers and the load are `benchmarks.http_routes`'s (raw keep-alive sockets from several processes; the
server's CPU from `/proc`, every thread). Each round measures every route on every server in turn, so the
figures of a round are moments apart; printed: the median rate and CPU a request over the rounds, and the
median of each round's CPU ratio to the server with metrics off. `--scrapes` then times that many scrapes of
`/metrics` on the server with metrics on (the Prometheus text built from the SDK's aggregation).

The commit before: `git archive <commit> | tar -x -C /tmp/before` and `--server-path /tmp/before`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--server-path", action="append", default=[], help="another checkout to serve from")
    parser.add_argument("--scrapes", type=int, default=50)
    arguments = parser.parse_args(argv)
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
