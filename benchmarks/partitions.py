"""Several servers on one PostgreSQL database (issue 33): workflow throughput with 1, 2 and 3 servers, as ratios to
one server in the same run, and where the machine's CPU went. Prints; asserts nothing.

    python -m benchmarks.partitions [--servers 1,2,3] [--rounds N] [--seconds S] [--connections N] [--sweep D]
                                    [--run-ids]

For each count of servers: a fresh database in the tests' PostgreSQL server (`LEDGER_TEST_POSTGRES_URL`, by
default the local server's `test` database; dropped afterwards), that many server processes on it (the test
harness's forked servers, one `SECRETS_KEY`, `WORKFLOW_SWEEP_INTERVAL` left at 1 s unless `--sweep` sets it), a
playbook with the three-step `set` workflow `steps` saved through the first, and, once `GET /v1/status` shows
every server holding partitions, `--rounds` rounds (after a 1 s one that warms up and is not kept). A round
drives every server at once for `--seconds` with the raw-socket load of `benchmarks.http_routes`
(`auto_runtime.bench.load`: one load process a server, `--connections` keep-alive sockets each, each sending its
next `run_definition` as soon as the last one is answered), then waits until none of the playbook's workflow
runs is `started` (a run taken where it arrives may end on its partition's holder after its start was answered).
The starts name no run id, as a caller that does not retry sends them; with `--run-ids` each names a new one (a
caller that may retry), so a start reaching a server that does not hold its run's partition is handed over.

Printed per count: the median of the rounds' workflows a second (runs started over the time from the load's
start to the moment none was left started), its ratio to one server's median, and the share of the machine's CPU
(all its cores over the round) taken by the servers, by the PostgreSQL backends of this database with the
cluster's WAL writer, checkpointer and background writer, by every PostgreSQL process (another client of the
cluster shows here, so a shared machine reads higher), and by the load processes; then the machine's idle time
(`/proc/stat`: near 0% means the cores, not the servers, set the rate; what is neither idle nor listed is other
processes'). Last, the servers' CPU a workflow (all servers' CPU over the runs), and the share of the starts handed
to another server (`workflow-start:` due entries recorded over the round, per run started: a start naming no run id
is given one in a partition of the server it reached, so none should be handed over once every server holds
partitions).

A server that refuses the load (a release where one server holds every workflow answers the others' starts
`unavailable`) is printed as refused, with its answer, and with the servers' log lines of its incident for a 500.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

import asyncpg
import httpx

from auto_runtime.bench.load import FRESH_UUID, LoadFailed, LoadRun, Route, cpu_seconds
from auto_runtime.bench.workload import STEPS
from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on

START_BODY = b'{"input": {"n": 1}}'
START_BODY_WITH_RUN_ID = b'{"input": {"n": 1}, "run_id": "' + FRESH_UUID + b'"}'
BOUND_SECONDS = 120.0
"""How long a wait (servers settling, runs ending) may last before the benchmark gives up: a bound."""
CORES = os.cpu_count() or 1
WARM_UP_SECONDS = 1.0
"""The round before the kept ones, which is not kept."""
CLUSTER_HELPERS = ("walwriter", "checkpointer", "background writer")
"""PostgreSQL's processes that work for every database of the cluster, counted with this database's backends."""


@dataclass(frozen=True)
class Round:
    rate: float
    seconds: float
    servers_cpu: float
    database_cpu: float
    postgres_cpu: float
    load_cpu: float
    idle: float
    handed_over: float


def postgres_processes() -> list[tuple[int, str]]:
    """Every PostgreSQL process on this machine, with its title (`postgres: 15/main: postgres db 127.0.0.1(…)`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append((int(entry.name), title))
    return found


def cpu_of(pids: Sequence[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += cpu_seconds(pid)
        except OSError:
            continue
    return total


def idle_seconds() -> float:
    """The machine's idle time (idle and waiting on I/O, every core) since it started, from `/proc/stat`."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def handed_over(url: str) -> int:
    """How many starts were handed to another server so far: the `workflow-start:` due entries recorded."""

    async def count() -> int:
        connection = await asyncpg.connect(url)
        try:
            found = await connection.fetchval("SELECT count(*) FROM ledger_due_work WHERE key LIKE 'workflow-start:%'")
        finally:
            await connection.close()
        return int(found)

    return asyncio.run(count())


def children_cpu() -> float:
    """The CPU of this process's waited-for children (the load processes), from `/proc/self/stat`."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


class Sampler:
    """CPU seconds of the servers, of this database's PostgreSQL side, of all PostgreSQL and of the load, read
    before and after a round (a backend that ended meanwhile is missed: the servers keep theirs open)."""

    def __init__(self, servers: Sequence[ServerProcess], url: str) -> None:
        self.servers = servers
        self.url = url
        self.database = url.rsplit("/", 1)[1]

    def read(self) -> tuple[float, float, float, float, float]:
        processes = postgres_processes()
        ours = [pid for pid, title in processes if f" {self.database} " in title or title.endswith(CLUSTER_HELPERS)]
        return (
            cpu_of([server.process.pid for server in self.servers]),
            cpu_of(ours),
            cpu_of([pid for pid, _ in processes]),
            children_cpu(),
            idle_seconds(),
        )


def still_started(client: httpx.Client, playbook: str) -> bool:
    response = client.get(f"{playbook}/runs", params={"status": "started", "type": "workflow", "limit": 1})
    response.raise_for_status()
    return bool(response.json()["runs"])


def one_round(
    servers: Sequence[ServerProcess],
    playbook: str,
    sampler: Sampler,
    seconds: float,
    connections: int,
    run_ids: bool = False,
) -> Round:
    body = START_BODY_WITH_RUN_ID if run_ids else START_BODY
    route = Route("steps", "POST", f"{playbook}/definitions/workflow/steps/run", body, 200, fresh_uuids=run_ids)
    handed_before = handed_over(sampler.url)
    before = sampler.read()
    started = time.monotonic()
    runs = [
        LoadRun("127.0.0.1", int(server.base_url.rsplit(":", 1)[1]), route, 1, connections, seconds)
        for server in servers
    ]
    done = sum(answer.done for run in runs for answer in run.answers())
    with servers[0].client() as client:
        deadline = time.monotonic() + BOUND_SECONDS
        while still_started(client, playbook):
            if time.monotonic() > deadline:
                raise RuntimeError(f"runs still started {BOUND_SECONDS:g} s after the load")
            time.sleep(0.05)
    elapsed = time.monotonic() - started
    after = sampler.read()
    machine = elapsed * CORES
    shares = [(b - a) / machine for a, b in zip(before, after, strict=True)]
    handed = (handed_over(sampler.url) - handed_before) / max(done, 1)
    return Round(done / elapsed, elapsed, *shares, handed)


def wait_spread(servers: Sequence[ServerProcess]) -> None:
    """Until every server holds partitions (`GET /v1/status`); a release without it has nothing to wait for."""
    deadline = time.monotonic() + BOUND_SECONDS
    while time.monotonic() < deadline:
        holding = []
        for server in servers:
            with server.client() as client:
                response = client.get("/v1/status")
            if response.status_code == 404:
                return
            holding.append(bool(response.json()["partitions"]))
        if all(holding):
            return
        time.sleep(0.2)
    raise RuntimeError("the servers did not share the partitions")


@contextmanager
def servers_on_one_database(count: int, folder: Path, sweep: str | None) -> Iterator[tuple[list[ServerProcess], str]]:
    """`count` servers on a fresh database, started at once, with `WORKFLOW_SWEEP_INTERVAL` at `sweep` (None:
    the default); stopped at the end. Answers them and the database's URL."""
    with ExitStack() as stack:
        url = stack.enter_context(fresh_database("bench_partitions"))
        settings = {**server_on(url), "LOG_LEVEL": "warn"}
        if sweep is not None:
            settings["WORKFLOW_SWEEP_INTERVAL"] = sweep
        started: list[ServerProcess] = []
        failures: list[BaseException] = []

        def one(index: int) -> None:
            try:
                started.append(start_server(folder / f"server{count}-{index}", settings))
            except BaseException as error:
                failures.append(error)

        threads = [threading.Thread(target=one, args=(index,)) for index in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for server in started:
            stack.callback(server.stop)
        if failures:
            raise failures[0]
        yield started, url


def measure(count: int, folder: Path, arguments: argparse.Namespace) -> list[Round] | str:
    """The kept rounds with `count` servers, or why the servers refused the load."""
    with servers_on_one_database(count, folder, arguments.sweep) as (servers, url):
        with servers[0].client() as client:
            playbook = new_playbook(client)
            saved = client.post(f"{playbook}/definitions/workflow", json={"name": "steps", "source": STEPS})
            saved.raise_for_status()
        wait_spread(servers)
        sampler = Sampler(servers, url)
        try:
            one_round(servers, playbook, sampler, WARM_UP_SECONDS, arguments.connections, arguments.run_ids)
            rounds = [
                one_round(servers, playbook, sampler, arguments.seconds, arguments.connections, arguments.run_ids)
                for _ in range(arguments.rounds)
            ]
        except LoadFailed as refused:
            head, _, body = str(refused).partition("\r\n\r\n")
            return f"{head.splitlines()[0]} {body}"[:300] + incident_lines(servers, body)
        return rounds


def incident_lines(servers: Sequence[ServerProcess], body: str) -> str:
    """The servers' log lines naming the incident of a 500 the load met (its `instance`), if the answer has one."""
    found = re.search(r"urn:uuid:([0-9a-f-]{36})", body)
    if found is None:
        return ""
    lines = [line for server in servers for line in server.log().splitlines() if found.group(1) in line]
    return "\n" + "\n".join(line[:4000] for line in lines[-3:])


def report(results: dict[int, list[Round] | str]) -> None:
    floor = results.get(1)
    base = statistics.median(r.rate for r in floor) if isinstance(floor, list) else None
    header = f"{'servers':>7} {'wf/s':>7} {'x one':>6}   machine CPU: "
    columns = f"{'servers':>7} {'this db':>7} {'all pg':>7} {'load':>5} {'idle':>5}"
    print(header + columns + "   servers' CPU a workflow, starts handed over")
    for count, rounds in results.items():
        if isinstance(rounds, str):
            print(f"{count:>7} refused: {rounds}")
            continue
        rate = statistics.median(r.rate for r in rounds)
        ratio = f"{rate / base:5.2f}x" if base else "     -"
        servers, database, postgres, load, idle, handed = (
            statistics.median(getattr(r, name) for r in rounds)
            for name in ("servers_cpu", "database_cpu", "postgres_cpu", "load_cpu", "idle", "handed_over")
        )
        a_run = statistics.median(r.servers_cpu * CORES / r.rate for r in rounds)
        shares = f"{servers:7.0%} {database:7.0%} {postgres:7.0%} {load:5.0%} {idle:5.0%}"
        print(f"{count:>7} {rate:7.0f} {ratio:>6}   {'':12} {shares}   {a_run * 1e3:5.1f} ms {handed:7.1%}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default="1,2,3", help="the counts of servers to measure, one database each")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.5)
    parser.add_argument("--connections", type=int, default=8, help="keep-alive sockets a server")
    parser.add_argument("--sweep", help="WORKFLOW_SWEEP_INTERVAL of every server, such as PT0.2S (default: 1 s)")
    parser.add_argument("--run-ids", action="store_true", help="each start names a new run id (a caller that retries)")
    arguments = parser.parse_args(argv)
    counts = [int(count) for count in arguments.servers.split(",")]
    begun = time.perf_counter()
    print(
        f"workflow throughput of 3-step `set` workflows, servers on one PostgreSQL database: {arguments.rounds} "
        f"rounds of {arguments.seconds:g} s, {arguments.connections} sockets a server, {os.cpu_count()} cores, "
        f"{'a new run id in each start' if arguments.run_ids else 'no run id in the starts'} "
        "(the machine may be shared: read the ratios, measured in this run)"
    )
    with TemporaryDirectory(prefix="auto-runtime-bench-partitions-") as folder:
        results = {count: measure(count, Path(folder), arguments) for count in counts}
    report(results)
    print(f"\ntook {time.perf_counter() - begun:.1f}s")


if __name__ == "__main__":
    main()
