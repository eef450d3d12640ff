"""Computation runs through the sandbox pool and through HTTP, beside two floors. Prints; asserts nothing.

Runs a second and p50/p99 latency of a trivial program and of the spec's example (4 invoices):

- the sandbox half: through `SandboxPool` with 1 and 4 workers, and the sandbox floor: a bare loop of fresh
  store + instance of the snapshot executing the program and a call of `main` on a literal, no bridge or pool;
- the HTTP half: `run_definition` through the real server, started as a process with `COMPUTATION_WORKERS=1`
  and `=4` and driven by `HTTP_CLIENTS` concurrent httpx clients from this process, and the HTTP floor:
  `GET /health` through the same server with the same clients. Every HTTP run is recorded in the server's
  SQLite ledger (`run_started`, then its ending), as in production.

Each case runs in 3 rounds; the rate printed is the median of the rounds (the machine may be shared). The
ratios printed compare rates measured in the same run. Run from the repository root as
`python -m benchmarks.computation` (about 60 s).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import trio

from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.store_run import StoreSession, run_store
from tests.conformance.computation.example import EXAMPLE_FRONT_MATTER, EXAMPLE_PROGRAM, INVOICES

ROUNDS = 3
SECONDS_PER_ROUND = 1.5
TRIVIAL = "def main(input):\n    return input\n"
CASES = {"trivial": (TRIVIAL, 1), "example": (EXAMPLE_PROGRAM, INVOICES)}
HTTP_CLIENTS = 4
HTTP_SECONDS_PER_ROUND = 1.0
FRONT_MATTER = {"trivial": "---\nlanguage: python\n---\n", "example": EXAMPLE_FRONT_MATTER}


def floor(engine: SandboxEngine, program: str, value: object) -> list[float]:
    """Bare fresh store + instance of the snapshot, `program` and a call of `main` on a literal executed as one
    line, one thread: no bridge, no input read, no output written."""
    code = f"{program}\nmain({value!r})\n"
    latencies: list[float] = []
    until = time.monotonic() + SECONDS_PER_ROUND
    while time.monotonic() < until:
        began = time.perf_counter()
        session = StoreSession(engine, 10**10)
        run_store(engine, session, code, Bridge((), {}, 0), RunControl(time.monotonic() + 10.0))
        del session
        latencies.append(time.perf_counter() - began)
    return latencies


async def through_pool(pool: SandboxPool, program: str, value: object, streams: int) -> list[float]:
    evaluation_json = json.dumps(value, separators=(",", ":"))
    latencies: list[float] = []
    until = time.monotonic() + SECONDS_PER_ROUND

    async def stream() -> None:
        while time.monotonic() < until:
            evaluation = Evaluation(program, 1, evaluation_json, 1_767_225_600_000, 1_048_320)
            began = time.perf_counter()
            await pool.run(evaluation)
            latencies.append(time.perf_counter() - began)

    async with trio.open_nursery() as nursery:
        for _ in range(streams):
            nursery.start_soon(stream)
    return latencies


def summary(name: str, rounds: list[list[float]], seconds: float = SECONDS_PER_ROUND) -> tuple[float, float]:
    """Print the median rate of the rounds and the p50 and p99 of every run; return the rate and the p50."""
    rate = statistics.median(len(latencies) / seconds for latencies in rounds)
    cuts = statistics.quantiles([latency for latencies in rounds for latency in latencies], n=100)
    print(f"  {name:<28} {rate:8.1f} runs/s   p50 {cuts[49] * 1000:7.2f} ms   p99 {cuts[98] * 1000:7.2f} ms")
    return rate, cuts[49]


async def sandbox_half() -> dict[str, float]:
    """The sandbox half; returns the bare-wasmtime floor's rate of each case."""
    floors: dict[str, float] = {}
    engine = SandboxEngine(Path(tempfile.mkdtemp(prefix="auto-runtime-bench-")))
    try:
        for case, (program, value) in CASES.items():
            print(f"{case}, in the sandbox:")
            base, _ = summary("bare wasmtime (sandbox floor)", [floor(engine, program, value) for _ in range(ROUNDS)])
            floors[case] = base
            for workers in (1, 4):
                pool = SandboxPool(engine, workers)
                try:
                    rounds = [await through_pool(pool, program, value, workers) for _ in range(ROUNDS)]
                    rate, _ = summary(f"pool, {workers} worker(s)", rounds)
                finally:
                    pool.close()
                print(f"  {'':<28} {rate / base:8.2f} x the sandbox floor")
    finally:
        engine.close()
        gc.collect()
    return floors


def start_server(folder: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m auto_runtime serve` in `folder` on a free loopback port, once `/health` answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {name: os.environ[name] for name in ("PATH", "LANG", "TMPDIR") if name in os.environ}
    environment |= {"HOME": str(folder), "PORT": str(port), "LOG_LEVEL": "warn", "COMPUTATION_WORKERS": str(workers)}
    log = (folder / "server.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "auto_runtime", "serve"], cwd=folder, env=environment, stdout=log, stderr=log
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{base_url}/health", timeout=1.0).status_code == 200:
                return process, base_url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the server did not start; see {folder / 'server.log'}")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def through_http(base_url: str, send: Callable[[httpx.Client], httpx.Response]) -> list[float]:
    """`HTTP_CLIENTS` threads, each with its own keep-alive client, sending for one round; every latency."""
    latencies: list[float] = []
    lock = threading.Lock()
    until = time.monotonic() + HTTP_SECONDS_PER_ROUND

    def client_loop() -> None:
        own: list[float] = []
        with httpx.Client(base_url=base_url, timeout=30.0) as client:
            while time.monotonic() < until:
                began = time.perf_counter()
                response = send(client)
                own.append(time.perf_counter() - began)
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
        with lock:
            latencies.extend(own)

    threads = [threading.Thread(target=client_loop) for _ in range(HTTP_CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def http_half(floors: dict[str, float]) -> None:
    """The HTTP half: one real server per worker count, the `/health` floor measured on the same server."""
    for workers in (1, 4):
        folder = Path(tempfile.mkdtemp(prefix=f"auto-runtime-bench-http-{workers}-"))
        process, base_url = start_server(folder, workers)
        try:
            with httpx.Client(base_url=base_url, timeout=30.0) as client:
                response = client.post("/v1/orgs/bench/playbooks", json={"playbook": "bench", "name": "Bench"})
                if response.status_code != 201:
                    raise RuntimeError(response.text)
                playbook = "/v1/orgs/bench/playbooks/bench"
                for case, (program, _value) in CASES.items():
                    source = FRONT_MATTER[case] + program
                    response = client.post(f"{playbook}/definitions/computation", json={"name": case, "source": source})
                    if response.status_code != 201:
                        raise RuntimeError(response.text)
            print(f"through HTTP, COMPUTATION_WORKERS={workers}, {HTTP_CLIENTS} clients:")
            through_http(base_url, lambda client: client.get("/health"))
            health_rounds = [through_http(base_url, lambda client: client.get("/health")) for _ in range(ROUNDS)]
            health, health_p50 = summary("GET /health (HTTP floor)", health_rounds, HTTP_SECONDS_PER_ROUND)
            for case, (_program, value) in CASES.items():
                body = {"input": value}
                url = f"{playbook}/definitions/computation/{case}/run"

                def send(client: httpx.Client, url: str = url, body: object = body) -> httpx.Response:
                    return client.post(url, json=body)

                through_http(base_url, send)
                rounds = [through_http(base_url, send) for _ in range(ROUNDS)]
                rate, p50 = summary(f"run {case}", rounds, HTTP_SECONDS_PER_ROUND)
                print(
                    f"  {'':<28} {rate / floors[case]:8.2f} x the sandbox floor   {rate / health:6.3f} x the HTTP floor"
                    f"   p50 {p50 / health_p50:6.1f} x the HTTP floor's"
                )
        finally:
            stop_server(process)


def main() -> None:
    floors = trio.run(sandbox_half)
    http_half(floors)


if __name__ == "__main__":
    main()
