"""Operation routes through the real server beside a bare Quart-Trio route of the same shape. Prints; asserts
nothing.

    python -m benchmarks.http_routes [--rounds N] [--seconds S] [--connections N] [--processes N]
                                     [--server-path DIR ...] [--profile FILE] [--route NAME ...]
                                     [--env NAME=VALUE ...]

`/health` and three routes of the seeds, each against its bare twin:

- `get_playbook`: `GET /v1/orgs/bench/playbooks/bench`, path fields and no body;
- `update_playbook` with the name and description the playbook already has: `PUT` of the same path with a
  small JSON body, which reads the playbook and records nothing (an update that changes nothing), so the
  route is measured without a commit;
- `run_definition` of a computation function that adds two numbers: `POST` of its run path, a new run each time
  (a sandbox run and two commits: `run_started`, then `run_succeeded`).

The bare twin is a Quart-Trio app with the same two routes (Werkzeug rules with the same path converters),
which reads the JSON body (`PUT`), answers the bytes the real route answered with the same headers, and is
served by Hypercorn in another process with the configuration the server's `http_child` gives it (bind,
graceful timeout, no access log, the error log on a logger). `--env NAME=VALUE` sets a variable for every real
server (`OTEL_EXPORTER_OTLP_ENDPOINT` measures them sending telemetry). Both servers run at the same time; each round
measures every route of both, one after the other, so the ratio compares rates taken moments apart.

First, in this process, the cost of decoding the inputs of a few operations both ways: the pydantic model first
(`decode_input`) and the JSON Schema first (`checked_decode`, the path every input took before and the one a
refused input still takes).

The load generator is `--processes` processes (2 by default), each driving `--connections` keep-alive sockets
(4 by default) with raw HTTP/1.1 written once and read back by `Content-Length`: it costs a few tens of
microseconds a request, well under either server's cost (`load_answers` also gives each request's latency,
drives a fixed number of requests and keeps their bodies: `benchmarks.workflows` uses it); it lives in
`auto_runtime.bench.load`, which `auto-runtime bench` uses too. Beside each rate,
the server's CPU a request (every thread, from `/proc`). Printed: the median of the rounds, and the median of
each round's ratio to the bare twin.
`--server-path` runs the real server from another checkout too (its `PYTHONPATH`), for a before-and-after in
one run: `git archive <commit> | tar -x -C /tmp/before` and pass `--server-path /tmp/before`. `--profile`
runs the (first) real server under cProfile and writes its statistics to FILE when it stops.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

from auto_runtime.bench.load import Route, cpu_seconds, free_port, load

ORG = "bench"
PLAYBOOK = "bench"
PATH = f"/v1/orgs/{ORG}/playbooks/{PLAYBOOK}"
UPDATE_BODY = json.dumps({"name": "Bench", "description": "A playbook to measure routes with"}).encode()
RUN_PATH = f"{PATH}/definitions/computation/add/run"
RUN_BODY = json.dumps({"input": {"a": 2, "b": 40}}).encode()
ADD_SOURCE = "---\nlanguage: python\n---\ndef main(input):\n    return input['a'] + input['b']\n"
START_BOUND_SECONDS = 60.0
"""How long a server may take to answer `/health` before the benchmark gives up (a bound, not a measurement)."""


ROUTES = (
    Route("GET /health", "GET", "/health", b"", 200),
    Route("get_playbook", "GET", PATH, b"", 200),
    Route("update_playbook (no change)", "PUT", PATH, UPDATE_BODY, 200),
    Route("run_definition (computation)", "POST", RUN_PATH, RUN_BODY, 200),
)


# The bare twin ------------------------------------------------------------------------------------------------


def serve_bare(port: int, answers_file: Path) -> None:
    """The bare Quart-Trio app on `port`, answering the bytes of `answers_file` (route name to body)."""
    import logging

    import trio
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from quart import Response, request
    from quart_trio import QuartTrio

    answers: dict[str, str] = json.loads(answers_file.read_text())
    app = QuartTrio("bare")

    def answer(body: str) -> Response:
        response = Response(body.encode(), status=200, content_type="application/json")
        response.headers["Cache-Control"] = "no-store"
        response.headers["x-request-id"] = str(uuid.uuid4())
        return response

    @app.route("/health", methods=["GET"], provide_automatic_options=False)
    async def health() -> Response:
        return answer(answers["GET /health"])

    @app.route("/v1/orgs/<org>/playbooks/<playbook>", methods=["GET"], provide_automatic_options=False)
    async def get_playbook(org: str, playbook: str) -> Response:
        return answer(answers["get_playbook"])

    @app.route("/v1/orgs/<org>/playbooks/<playbook>", methods=["PUT"], provide_automatic_options=False)
    async def update_playbook(org: str, playbook: str) -> Response:
        fields = json.loads(await request.get_data())
        if not isinstance(fields, dict):
            return Response(b"{}", status=400)
        return answer(answers["update_playbook (no change)"])

    @app.route("/v1/orgs/<org>/playbooks/<playbook>/definitions/<kind>/<name>/run", methods=["POST"])
    async def run_definition(org: str, playbook: str, kind: str, name: str) -> Response:
        fields = json.loads(await request.get_data())
        if not isinstance(fields, dict):
            return Response(b"{}", status=400)
        return answer(answers["run_definition (computation)"])

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.graceful_timeout = 5.0
    config.accesslog = None
    config.errorlog = logging.getLogger("bare.hypercorn")
    trio.run(partial(serve, app, config))


# Servers ------------------------------------------------------------------------------------------------------


@dataclass
class Server:
    label: str
    process: subprocess.Popen[bytes]
    port: int
    folder: Path

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def wait_for_health(server: Server) -> None:
    deadline = time.monotonic() + START_BOUND_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.label} exited; see {server.folder / 'server.log'}")
        try:
            if httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"{server.label} did not start; see {server.folder / 'server.log'}")


def start_process(label: str, program: str, python_path: str, extra: dict[str, str] | None = None) -> Server:
    """`python -c program` in a fresh folder (its `HOME`) with `PORT` set to a free port, once `/health` answers."""
    folder = Path(tempfile.mkdtemp(prefix="auto-runtime-bench-routes-"))
    port = free_port()
    environment = {name: os.environ[name] for name in ("PATH", "LANG", "TMPDIR") if name in os.environ}
    environment |= {"HOME": str(folder), "PORT": str(port), "LOG_LEVEL": "warn", "PYTHONPATH": python_path}
    environment |= extra or {}
    log = (folder / "server.log").open("ab")
    process = subprocess.Popen([sys.executable, "-c", program], cwd=folder, env=environment, stdout=log, stderr=log)
    server = Server(label, process, port, folder)
    wait_for_health(server)
    return server


RUNTIME = "from auto_runtime.cli import main; main(['serve'])"
PROFILED_RUNTIME = """import cProfile, os
from pathlib import Path
from auto_runtime.server import run_server
profiler = cProfile.Profile()
profiler.enable()
code = run_server(os.environ, Path.cwd())
profiler.disable()
profiler.dump_stats({file!r})
os._exit(code)
"""
"""The server as `auto-runtime serve` runs it, under cProfile; `cli` ends with `os._exit`, so the statistics are
written before it."""
BARE = "import os; from pathlib import Path; from benchmarks.http_routes import serve_bare; " + (
    "serve_bare(int(os.environ['PORT']), Path({file!r}))"
)


def start_runtime(label: str, python_path: str, profile: str | None, extra: dict[str, str]) -> Server:
    program = PROFILED_RUNTIME.format(file=str(Path(profile).resolve())) if profile else RUNTIME
    server = start_process(label, program, python_path, extra)
    try:
        _set_up(server)
    except BaseException:
        server.stop()
        raise
    return server


def _set_up(server: Server) -> None:
    """The playbook and the computation function the routes use."""
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30.0) as client:
        created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": PLAYBOOK, **json.loads(UPDATE_BODY)})
        if created.status_code != 201:
            raise RuntimeError(created.text)
        defined = client.post(f"{PATH}/definitions/computation", json={"name": "add", "source": ADD_SOURCE})
        if defined.status_code != 201:
            raise RuntimeError(defined.text)


def answers_of(server: Server) -> dict[str, str]:
    """The body each route of the real server answers, for the bare twin to answer too."""
    answers = {}
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30.0) as client:
        for route in ROUTES:
            response = client.request(route.method, route.path, content=route.body or None, headers=_headers(route))
            if response.status_code != route.status:
                raise RuntimeError(f"{route.name}: {response.status_code} {response.text[:300]}")
            answers[route.name] = response.text
    return answers


def _headers(route: Route) -> dict[str, str]:
    return {"Content-Type": "application/json"} if route.body else {}


# Decoding alone ----------------------------------------------------------------------------------------------

DECODED = (
    ("get_playbook", {"playbook": PLAYBOOK}),
    ("update_playbook", {"playbook": PLAYBOOK, **json.loads(UPDATE_BODY)}),
    ("list_runs", {"status": "succeeded", "limit": 20}),
    (
        "run_definition",
        {"type": "computation", "name": "echo", "input": {"rows": [{"n": i, "x": 1.5} for i in range(20)]}},
    ),
)


def decoding(repeats: int = 5, calls: int = 2000) -> None:
    """Microseconds a call of `decode_input` (the strict model first) and of `checked_decode` (the schema, then the
    lax model: what `decode_input` did before), in this process, each the best of `repeats` runs of `calls`."""
    from auto_runtime.guides import load_guides
    from auto_runtime.operations.decode import checked_decode, decode_input
    from auto_runtime.operations.runtime_catalog import build_catalog

    catalog = build_catalog(load_guides())
    print("decoding an input, in this process (best of 5):")
    for name, raw in DECODED:
        operation = catalog.named(name)
        timings = []
        for decode in (checked_decode, decode_input):
            call = partial(decode, operation, raw)
            timings.append(min(timeit.timeit(call, number=calls) for _ in range(repeats)) / calls)
        before, after = timings
        print(f"  {name:<40} schema first {before * 1e6:6.1f} us   model first {after * 1e6:6.1f} us")


# The run ------------------------------------------------------------------------------------------------------


Measurements = dict[tuple[str, str], list[tuple[float, float]]]
"""Per server label and route name: the rate and the server's CPU a request of each round, in round order."""


def measure(servers: Sequence[Server], routes: Sequence[Route], arguments: argparse.Namespace) -> Measurements:
    """Every round measures each route on each server in turn, so one round's figures are moments apart; a round
    before the first warms every server up and is not kept."""
    rounds: Measurements = {}
    for round_number in range(arguments.rounds + 1):
        for route in routes:
            for server in servers:
                cpu_before = cpu_seconds(server.process.pid)
                rate = load(server.port, route, arguments.processes, arguments.connections, arguments.seconds)
                cpu = (cpu_seconds(server.process.pid) - cpu_before) / (rate * arguments.seconds)
                if round_number:
                    rounds.setdefault((server.label, route.name), []).append((rate, cpu))
    return rounds


def report(rounds: Measurements, servers: Sequence[Server], bare: Server, routes: Sequence[Route]) -> None:
    """Median rate and CPU of each server and route, and the median over rounds of each round's ratio to the
    bare twin (a ratio of figures taken moments apart, steadier on a shared machine than a ratio of medians)."""
    for route in routes:
        print(f"{route.name}:")
        floor = rounds[(bare.label, route.name)]
        for server in servers:
            own = rounds[(server.label, route.name)]
            rate = statistics.median(r for r, _ in own)
            cpu = statistics.median(c for _, c in own)
            line = f"  {server.label:<40} {rate:8.0f} requests/s {cpu * 1e6:6.0f} us CPU a request"
            if server is not bare:
                ratio = statistics.median(f / r for (f, _), (r, _) in zip(floor, own, strict=True))
                cpu_ratio = statistics.median(c / f for (_, f), (_, c) in zip(floor, own, strict=True))
                line += f"   bare/this {ratio:5.2f}x (CPU {cpu_ratio:5.2f}x)"
            print(line)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--server-path", action="append", default=[], help="another checkout to serve from")
    parser.add_argument("--profile", help="run the first real server under cProfile, stats to this file")
    parser.add_argument("--route", action="append", choices=[r.name for r in ROUTES], help="measure only these")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for every real server")
    arguments = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in arguments.env)
    routes = [route for route in ROUTES if not arguments.route or route.name in arguments.route]
    decoding()

    here = str(Path(__file__).resolve().parent.parent)
    runtimes = [("this checkout", here), *((f"server at {path}", path) for path in arguments.server_path)]
    servers: list[Server] = []
    try:
        for index, (label, path) in enumerate(runtimes):
            servers.append(start_runtime(label, path, arguments.profile if index == 0 else None, extra))
        answers_file = servers[0].folder / "answers.json"
        answers_file.write_text(json.dumps(answers_of(servers[0])))
        bare = start_process("bare Quart-Trio", BARE.format(file=str(answers_file)), here)
        servers.append(bare)
        print(
            f"{arguments.processes} load processes x {arguments.connections} connections, "
            f"{arguments.seconds:g} s a measurement, median of {arguments.rounds} rounds (the machine may be shared)"
        )
        report(measure(servers, routes, arguments), servers, bare, routes)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
