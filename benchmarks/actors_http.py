"""The actor benchmark's HTTP half: what the runtime's paths cost through the real server, beside `/health`, and
what 10,000 playbooks and 10,000 waiting workflow runs hold in the server's memory. Prints; asserts nothing.

    python -m benchmarks.actors_http [--rounds N] [--seconds S] [--connections N] [--processes N]
                                     [--playbooks N] [--runs N] [--server-path DIR ...]

Rates, each round measuring every route on every server in turn (the load generator of `http_routes`: raw
keep-alive sockets from several processes, well under a server's cost a request):

- `GET /health`, the floor;
- a trivial computation run (`def main(x): return x`) through `run_definition`, recorded in the server's SQLite
  ledger as in production;
- a three-step `set` workflow through `run_definition` (it ends in its first input).

Printed per server: the median rate and server CPU a request over the rounds, and the median of each round's
ratio to that server's `/health` rate taken moments before.

Where the busy time goes (`--sample-seconds`, 10 by default; 0 skips it): each server sampled by py-spy under
each run route's load, with the actor layer's share of its busy samples (`benchmarks.sampled_rooms`).

Memory (the server's resident set from `/proc`, after a warm-up): the growth per playbook after `--playbooks`
playbooks each had one definition saved (each save starts that playbook's actor, on a server that has them) and
once they have all been idle past `PLAYBOOK_IDLE_TIME` (1 s here, so the actors passivate); and the growth per run
after `--runs` workflow runs that wait an hour each. The resident set is noisy (the allocator keeps what it
freed), so read these as upper bounds.

`--server-path` runs another checkout's server beside this one (`git archive <commit> | tar -x -C /tmp/before`),
for a before-and-after in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from auto_runtime.bench.workload import STEPS, TRIVIAL
from benchmarks.http_routes import (
    ORG,
    PATH,
    RUNTIME,
    UPDATE_BODY,
    Route,
    Server,
    free_port,
    load,
    measure,
    wait_for_health,
)
from benchmarks.sampled_rooms import print_shares, sampled
from benchmarks.workflows import rss_mb

REPOSITORY = Path(__file__).resolve().parent.parent
WAITS = """document: { dsl: '1.0.3', namespace: bench, name: waits, version: '1.0.0' }
do:
  - pause: { wait: PT1H }
  - done: { set: { done: true } }
"""
ROUTES = (
    Route("GET /health", "GET", "/health", b"", 200),
    Route("computation run", "POST", f"{PATH}/definitions/computation/trivial/run", b'{"input": 1}', 200),
    Route("3-step set workflow", "POST", f"{PATH}/definitions/workflow/steps/run", b'{"input": {"n": 1}}', 200),
)
MEMORY_ORG = "memory"
SETUP_THREADS = 8
RETRIES = 50
IDLE_WAIT_SECONDS = 5.0
"""How long the memory measurement lets playbooks sit idle (past the 1 s idle time) before it reads again."""


def start_server(label: str, python_path: str) -> Server:
    """`auto-runtime serve` from `python_path`, in a fresh folder, with the bench playbook and its definitions."""
    folder = Path(tempfile.mkdtemp(prefix="auto-runtime-bench-actors-"))
    port = free_port()
    environment = {name: os.environ[name] for name in ("PATH", "LANG", "TMPDIR") if name in os.environ}
    environment |= {
        "HOME": str(folder),
        "PORT": str(port),
        "LOG_LEVEL": "warn",
        "PYTHONPATH": python_path,
        "PLAYBOOK_IDLE_TIME": "PT1S",
    }
    log = (folder / "server.log").open("ab")
    process = subprocess.Popen([sys.executable, "-c", RUNTIME], cwd=folder, env=environment, stdout=log, stderr=log)
    server = Server(label, process, port, folder)
    wait_for_health(server)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0) as client:
        _expect(client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": "bench", **json.loads(UPDATE_BODY)}), 201)
        _expect(client.post(f"{PATH}/definitions/computation", json={"name": "trivial", "source": TRIVIAL}), 201)
        _expect(client.post(f"{PATH}/definitions/workflow", json={"name": "steps", "source": STEPS}), 201)
        _expect(client.post(f"{PATH}/definitions/workflow", json={"name": "waits", "source": WAITS}), 201)
    return server


def _expect(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise RuntimeError(f"{response.request.method} {response.request.url}: {response.status_code} {response.text}")


def retried(send: Callable[[], httpx.Response], status: int) -> None:
    """Send until the answer is not `unavailable` (the server asks to send again, as when no checker is free)."""
    for _ in range(RETRIES):
        response = send()
        if response.status_code != 503:
            _expect(response, status)
            return
        time.sleep(float(response.headers.get("retry-after", "1")) / 10)
    _expect(response, status)


def in_threads(count: int, work: Callable[[httpx.Client, int], None], port: int) -> None:
    """`work(client, i)` for every i below `count`, on `SETUP_THREADS` threads with a client each."""

    def share(start: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0) as client:
            for number in range(start, count, SETUP_THREADS):
                work(client, number)

    with ThreadPoolExecutor(SETUP_THREADS) as pool:
        for done in [pool.submit(share, start) for start in range(SETUP_THREADS)]:
            done.result()


def playbook_memory(server: Server, count: int) -> tuple[float, float]:
    """Bytes of resident set per playbook: just after `count` playbooks each saved a definition, and after they
    were idle past the idle time."""

    def one(client: httpx.Client, number: int) -> None:
        name = f"pb-{number}"
        retried(lambda: client.post(f"/v1/orgs/{MEMORY_ORG}/playbooks", json={"playbook": name, "name": name}), 201)
        url = f"/v1/orgs/{MEMORY_ORG}/playbooks/{name}/definitions/computation"
        retried(lambda: client.post(url, json={"name": "trivial", "source": TRIVIAL}), 201)

    before = rss_mb(server.process.pid)
    in_threads(count, one, server.port)
    busy = rss_mb(server.process.pid)
    time.sleep(IDLE_WAIT_SECONDS)
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as client:
        _expect(client.get("/health"), 200)
    idle = rss_mb(server.process.pid)
    return (busy - before) * 2**20 / count, (idle - before) * 2**20 / count


def waiting_run_memory(server: Server, count: int) -> float:
    """Bytes of resident set per workflow run waiting on its timer, after `count` such runs started."""

    def one(client: httpx.Client, number: int) -> None:
        retried(lambda: client.post(f"{PATH}/definitions/workflow/waits/run", json={"input": {"n": number}}), 200)

    before = rss_mb(server.process.pid)
    in_threads(count, one, server.port)
    return (rss_mb(server.process.pid) - before) * 2**20 / count


def report(rounds: dict[tuple[str, str], list[tuple[float, float]]], servers: Sequence[Server]) -> None:
    floor_name = ROUTES[0].name
    for route in ROUTES:
        print(f"{route.name}:")
        for server in servers:
            own = rounds[(server.label, route.name)]
            floor = rounds[(server.label, floor_name)]
            rate = statistics.median(r for r, _ in own)
            cpu = statistics.median(c for _, c in own)
            ratio = statistics.median(r / f for (r, _), (f, _) in zip(own, floor, strict=True))
            line = f"  {server.label:<28} {rate:8.0f} requests/s {cpu * 1e6:7.0f} us CPU a request"
            print(f"{line}  {ratio:5.2f}x /health")


def print_sampled(servers: Sequence[Server], arguments: argparse.Namespace) -> None:
    """The actor layer's share of each server's busy time under each run route (`benchmarks.sampled_rooms`)."""
    seconds = arguments.sample_seconds
    for route in ROUTES[1:]:
        print(f"\nwhere the busy time goes under {route.name} ({seconds:g} s sampled by py-spy a server):")
        for server in servers:

            def under_load(route: Route = route, server: Server = server) -> None:
                load(server.port, route, arguments.processes, arguments.connections, seconds + 1)

            print_shares(server.label, sampled(server.process.pid, seconds, under_load))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--playbooks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--server-path", action="append", default=[], help="another checkout to run beside this one")
    parser.add_argument(
        "--sample-seconds", type=float, default=10.0, help="py-spy each server this long a run route (0: skip)"
    )
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    labelled = [("this checkout", str(REPOSITORY))]
    labelled += [(f"from {path}", str(Path(path).resolve())) for path in arguments.server_path]
    servers = [start_server(label, path) for label, path in labelled]
    try:
        print(
            f"actor benchmark over HTTP: {arguments.rounds} rounds of {arguments.seconds:g} s a route and server, "
            f"{arguments.processes} load processes x {arguments.connections} connections"
        )
        report(measure(servers, ROUTES, arguments), servers)
        if arguments.sample_seconds > 0:
            print_sampled(servers, arguments)
        if arguments.playbooks > 0 and arguments.runs > 0:
            print_memory(servers, arguments)
    finally:
        for server in servers:
            server.stop()
    print(f"\ntook {time.perf_counter() - started:.1f}s")


def print_memory(servers: list[Server], arguments: argparse.Namespace) -> None:
    """The resident set's growth per playbook and per waiting run, on each server (`--playbooks 0` or
    `--runs 0` skips it)."""
    print(f"\nserver memory (resident set growth; {arguments.playbooks:,} playbooks, {arguments.runs:,} runs):")
    for server in servers:
        busy, idle = playbook_memory(server, arguments.playbooks)
        runs = waiting_run_memory(server, arguments.runs)
        print(
            f"  {server.label:<28} {busy:8,.0f} B a playbook just used, {idle:8,.0f} B once idle;"
            f" {runs:8,.0f} B a waiting workflow run"
        )


if __name__ == "__main__":
    main()
