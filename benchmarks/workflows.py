"""Workflow runs through the real server: throughput and latency, timer lateness, memory of waiting runs.
Prints medians and ratios; asserts nothing.

    python -m benchmarks.workflows [--runs N] [--rounds N] [--processes N] [--timers N] [--timer-rate R] [--parts abc]
                                   [--listeners N] [--ledgers sqlite,postgres] [--database-url URL]

For each ledger (SQLite: a fresh file; PostgreSQL: a fresh database in `--database-url`'s server, dropped
afterwards) one server process is started (`WORKFLOW_SWEEP_INTERVAL` left at 1 s) and driven over HTTP:

(a) Workflows a second and p50/p99 latencies of `steps` (three `set` tasks) and `calls` (a `set`, a call to a
    computation function, a `set`), with 1 and 50 concurrent starters, each case the median of `--rounds` rounds
    of `--runs` runs (1 starter: a fifth, at least 10). The load is the raw-socket generator of
    `benchmarks.http_routes` (`load_answers`): up to `--processes` processes (2 by default; as many as divide the
    starters), one keep-alive socket a starter, each sending its next `run_definition` as soon as the last one
    is answered (an in-process httpx client was the bottleneck: at 50 starters it gave half the server's rate).
    Printed per case:
    - wf/s: the runs over the time from the first start request's send to the last run's end (its response
      when that holds the ended run, else its `ended_at`);
    - p50/p99: a start request's send to its full response, timed in the load process. `steps` ends in the
      request that started it, so this is start to succeeded; a `calls` start is answered `started` once the
      call is recorded, so its figure is the start request's alone (the `started` column counts such answers);
    - end p50/p99: a start request's send (`time.time()` in the load process) to its run's `ended_at` (the same
      machine's clock), every run of the round read afterwards with `get_run` (polled while `started`).
    Beside them: the ledger's raw append rate measured in the same run by `benchmarks.ledger_appends.ledger_rate`
    (1 KB records, 1 and 50 appenders) on the same kind of store, and the appends one workflow takes (the inputs
    its run applied, each one append, plus the records of its callee runs, each one append; due-work updates
    such as marking an entry fired are not counted).
(b) Timer lateness p50/p99 of `--timers` runs waiting on `wait: PT1S`: the time of the `timer_fired`
    `workflow_input_applied` record (its `at`) minus the due time (the run's first input time, kept by the
    first task as `task["startedAt"]`, plus 1 s), read from each run's history. Two loads:
    - light: one client starts the runs `--timer-rate` a second, so their timers come due at that rate, beside
      the starts (the issue's row); its floor, measured in this process in the same run, is a Trio task per
      timer sleeping until the same schedule's due times (`trio.sleep_until`);
    - burst: 50 starters start them as fast as the server takes them, so their timers come due together and
      wait for each other's inputs.
(c) Resident memory of the server (`VmRSS` of /proc/<pid>/status) before and with `--listeners` runs waiting on
    `listen` (target: under 300 MB; printed, not asserted), and the time to wake them all. The path is printed:
    one published playbook event when it wakes a listen (the "reactions" part), else `send_run_event` per run.
(b) and (c) start their runs with httpx clients in threads of this process: (b) times the server's own records,
but (c)'s times to start and to wake the runs include that client's cost.

The default run takes about 3 minutes (on a 2-core machine); the issue's sizes are the full run, which takes
much longer, mostly starting the listening runs one request each:
`python -m benchmarks.workflows --runs 200 --timers 1000 --listeners 10000`. `--parts b --ledgers sqlite --timers 20`
runs the timer row alone (issue 31's: 20 runs on `PT1S` at light load).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import secrets
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import trio

from auto_runtime.bench.load import Route, load_answers
from auto_runtime.bench.workload import STEPS
from auto_runtime.ledger import open_ledger
from benchmarks.ledger_appends import ledger_rate
from tests.conformance.helpers import create_computation, new_playbook
from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_workflow_crashes import ECHO, history, send

STARTERS = (1, 50)
START_BODY = json.dumps({"input": {"n": 1}}).encode()
"""A start request of part (a): no `run_id`, so every request starts a new run under an id the server picks."""
BOUND_SECONDS = 600.0
"""How long a wait for runs to end may last before the benchmark gives up (a bound, not a measurement)."""
CALLS = """document: { dsl: '1.0.3', namespace: bench, name: calls, version: '1.0.0' }
do:
  - one: { set: '${ {"n": data["n"]} }' }
  - echoed:
      call: run_definition
      with: { type: computation, name: echo, input: '${ {"n": data["n"] + 1} }' }
  - three: { set: '${ {"n": data["n"] + 1} }' }
"""
TIMER = """document: { dsl: '1.0.3', namespace: bench, name: timer, version: '1.0.0' }
do:
  - first: { set: '${ {"t0": task["startedAt"]["epoch"]["milliseconds"]} }' }
  - pause: { wait: PT1S }
  - last: { set: '${ {"t0": data["t0"], "fired": task["startedAt"]["epoch"]["milliseconds"]} }' }
"""
LISTEN = """document: { dsl: '1.0.3', namespace: bench, name: listens, version: '1.0.0' }
do:
  - hear: { listen: { to: { one: { with: { type: com.acme.bench.go } } } } }
"""


def ms(text: str) -> float:
    """Milliseconds since 1970 of an ISO 8601 UTC time."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def in_threads(count: int, work: Callable[[int], None]) -> None:
    """`work(i)` for i in 0..count-1 in `count` threads; the first error is raised again."""
    errors: list[BaseException] = []

    def guarded(number: int) -> None:
        try:
            work(number)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def ended(client: httpx.Client, playbook: str, run: dict[str, Any]) -> dict[str, Any]:
    """The run once it ended (polled every 20 ms while `started`)."""
    deadline = time.monotonic() + BOUND_SECONDS
    while run["status"] == "started":
        if time.monotonic() > deadline:
            raise AssertionError(f"the run {run['run_id']} did not end within {BOUND_SECONDS} s")
        time.sleep(0.02)
        run = client.get(f"{playbook}/runs/{run['run_id']}").json()
    return run


def start(client: httpx.Client, playbook: str, name: str, value: Any) -> dict[str, Any]:
    body = {"input": value, "run_id": str(uuid.uuid4())}
    response = send(client, "POST", f"{playbook}/definitions/workflow/{name}/run", json=body)
    if response.status_code != 200:
        raise AssertionError(response.text)
    run: dict[str, Any] = response.json()
    return run


# -- (a) throughput and latency ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Round:
    """One round of one case: the rate of ended runs, and latencies in ms."""

    rate: float
    """Runs over the time from the first start request's send to the last run's end: the later of its start
    request's response and its `ended_at`."""
    requests: list[float]
    """Each start request's send to its full response, timed in the load process."""
    ends: list[float]
    """Each start request's send (`time.time()` in the load process) to its run's `ended_at`."""
    answered_started: int
    """How many start requests were answered while their run was still `started`."""


def one_round(server: ServerProcess, playbook: str, name: str, starters: int, runs: int, processes: int) -> Round:
    """`runs` runs of `name` started over `starters` raw keep-alive sockets (`benchmarks.http_routes.load_answers`),
    shared among up to `processes` load processes (as many as divide `starters`), each socket sending its next
    start request as soon as the last one is answered; then every run read for its `ended_at` (`get_run`, polled
    while a run is `started`)."""
    route = Route(name, "POST", f"{playbook}/definitions/workflow/{name}/run", START_BODY, 200)
    processes = math.gcd(starters, processes)
    port = httpx.URL(server.base_url).port
    assert port is not None
    answers = load_answers(port, route, processes, starters // processes, BOUND_SECONDS, requests=runs, keep=True)
    sends: list[tuple[float, float, dict[str, Any]]] = [
        (sent_at * 1000, latency * 1000, json.loads(body))
        for answer in answers
        for (sent_at, body), latency in zip(answer.kept, answer.latencies, strict=True)
    ]
    ends: list[float] = []
    finished: list[float] = []
    with server.client() as client:
        for sent_at, latency, answered in sends:
            run = ended(client, playbook, answered)
            if run["status"] != "succeeded":
                raise AssertionError(run)
            ends.append(ms(run["ended_at"]) - sent_at)
            finished.append(sent_at + max(latency, ends[-1]))
    started = sum(1 for _, _, answered in sends if answered["status"] == "started")
    elapsed = max(finished) - min(sent_at for sent_at, _, _ in sends)
    return Round(len(sends) * 1000 / elapsed, [latency for _, latency, _ in sends], ends, started)


def appends_per_run(client: httpx.Client, playbook: str, run_id: str) -> int:
    """The appends of one run: one per applied input (the first also holds `run_started`), plus one per
    record of each callee run (a computation records `run_started`, then its ending)."""
    events = history(client, playbook, run_id)
    appends = sum(1 for event in events if event["type"] == "workflow_input_applied")
    for event in events:
        if event["type"] == "step_waiting" and "run_id" in event["data"]:
            appends += len(history(client, playbook, event["data"]["run_id"]))
    return appends


def throughput(
    server: ServerProcess, playbook: str, runs: int, rounds: int, processes: int
) -> dict[str, tuple[float, int]]:
    """Prints case by case; answers per workflow its median rate at 50 starters and its appends per run."""
    print(
        f"  {'workflow':>8} {'starters':>8} {'wf/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'end p50':>8} {'end p99':>8}"
        f" {'started':>8}  (median of {rounds} rounds)"
    )
    summary: dict[str, tuple[float, int]] = {}
    with server.client() as client:
        for name in ("steps", "calls"):
            for _ in range(3):  # warm-up: the definition's first runs, the sandbox's instances
                ended(client, playbook, start(client, playbook, name, {"n": 1}))
            for starters in STARTERS:
                size = runs if starters > 1 else max(10, runs // 5)
                measured = [one_round(server, playbook, name, starters, size, processes) for _ in range(rounds)]
                rate = statistics.median(one.rate for one in measured)
                figures = [
                    statistics.median(percentile(getattr(one, field), fraction) for one in measured)
                    for field in ("requests", "ends")
                    for fraction in (0.5, 0.99)
                ]
                started = f"{sum(one.answered_started for one in measured)}/{size * rounds}"
                print(
                    f"  {name:>8} {starters:>8} {rate:>8.1f}{''.join(f' {f:>8.1f}' for f in figures)} {started:>8}",
                    flush=True,
                )
                summary[name] = (rate, 0)
            sample = start(client, playbook, name, {"n": 1})
            ended(client, playbook, sample)
            summary[name] = (summary[name][0], appends_per_run(client, playbook, sample["run_id"]))
    return summary


async def raw_append_rates(open_it: Callable[[], Any], count: int) -> dict[int, float]:
    """The ledger's own append rate (1 KB records, `benchmarks.ledger_appends`), 1 and 50 appenders."""
    async with open_it() as ledger:
        await ledger_rate(ledger, 16, 200, -1)
        return {appenders: await ledger_rate(ledger, appenders, count, 0) for appenders in STARTERS}


# -- (b) timer lateness ------------------------------------------------------------------------------------------


def timer_lateness(server: ServerProcess, playbook: str, count: int, rate: float) -> None:
    floor = trio.run(sleep_until_lateness, count, rate)
    print(
        f"  floor: {count} Trio tasks sleeping until due times {1 / rate * 1000:.0f} ms apart, lateness in ms "
        f"p50 {percentile(floor, 0.5):.1f}, p99 {percentile(floor, 0.99):.1f}"
    )
    with server.client() as client:
        paced: list[str] = []
        began = time.monotonic()
        for number in range(count):
            time.sleep(max(0.0, began + number / rate - time.monotonic()))
            paced.append(start(client, playbook, "timer", {})["run_id"])
    print_lateness(server, playbook, paced, f"light: {count} runs started {rate:g} a second")

    burst: list[str] = []
    starters = min(50, count)

    def starter(number: int) -> None:
        with server.client() as client:
            burst.extend(start(client, playbook, "timer", {})["run_id"] for _ in range(number, count, starters))

    in_threads(starters, starter)
    print_lateness(server, playbook, burst, f"burst: {count} runs started at once by {starters} starters")


async def sleep_until_lateness(count: int, rate: float) -> list[float]:
    """Milliseconds each of `count` Trio tasks woke after its due time, the due times `1 / rate` s apart."""
    late: list[float] = []
    first_due = trio.current_time() + 1.0

    async def sleeper(due: float) -> None:
        await trio.sleep_until(due)
        late.append((trio.current_time() - due) * 1000)

    async with trio.open_nursery() as nursery:
        for number in range(count):
            nursery.start_soon(sleeper, first_due + number / rate)
    return late


def print_lateness(server: ServerProcess, playbook: str, run_ids: list[str], label: str) -> None:
    records: list[float] = []
    inputs: list[float] = []
    with server.client() as client:
        for run_id in run_ids:
            run = ended(client, playbook, client.get(f"{playbook}/runs/{run_id}").json())
            due = run["output"]["t0"] + 1000
            fired = next(
                event
                for event in history(client, playbook, run_id)
                if event["type"] == "workflow_input_applied" and event["data"]["input"]["kind"] == "timer_fired"
            )
            records.append(ms(fired["metadata"]["at"]) - due)
            inputs.append(run["output"]["fired"] - due)
    print(
        f"  {label}, lateness in ms: record time − due p50 {percentile(records, 0.5):.0f}, "
        f"p99 {percentile(records, 0.99):.0f}, max {max(records):.0f}; "
        f"the input's own time − due p50 {percentile(inputs, 0.5):.0f}, p99 {percentile(inputs, 0.99):.0f}"
    )


# -- (c) memory and waking -----------------------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise LookupError("no VmRSS")


def still_started(client: httpx.Client, playbook: str) -> bool:
    page = client.get(f"{playbook}/runs", params={"name": "listens", "status": "started", "limit": 1}).json()
    return bool(page["runs"])


def any_woken(client: httpx.Client, playbook: str, run_ids: list[str]) -> bool:
    """Whether one of a sample of the listening runs has ended (listens are offered oldest first, and a
    status-filtered `list_runs` looks only at the newest runs)."""
    sample = run_ids[:: max(1, len(run_ids) // 20)]
    return any(client.get(f"{playbook}/runs/{run_id}").json()["status"] != "started" for run_id in sample)


def listeners(server: ServerProcess, playbook: str, count: int) -> None:
    before = rss_mb(server.process.pid)
    run_ids: list[str] = []
    starters = min(50, count)

    def starter(number: int) -> None:
        with server.client() as client:
            run_ids.extend(start(client, playbook, "listens", {})["run_id"] for _ in range(number, count, starters))

    began = time.perf_counter()
    in_threads(starters, starter)
    started_in = time.perf_counter() - began
    time.sleep(1.0)
    waiting = rss_mb(server.process.pid)
    print(
        f"  server VmRSS {before:.0f} MB before, {waiting:.0f} MB with {count} runs waiting on listen "
        f"(target < 300 MB; {(waiting - before) * 1024 / count:.1f} KB a run); started in {started_in:.1f} s"
    )

    with server.client() as client:
        began = time.perf_counter()
        event = {"specversion": "1.0", "id": str(uuid.uuid4()), "type": "com.acme.bench.go", "source": "/bench"}
        published = client.post(f"{playbook}/events", json={"event": event})
        woke = False
        if published.status_code in (200, 201):
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline and not woke:
                woke = any_woken(client, playbook, run_ids)
                time.sleep(0.1)
    if woke:
        path = "one published playbook event (reactions)"
    else:
        path = "send_run_event per run (a published event woke no listen within 5 s)"
        began = time.perf_counter()

        def waker(number: int) -> None:
            with server.client() as client:
                for run_id in run_ids[number::starters]:
                    body = {"event": {"type": "com.acme.bench.go", "id": f"go-{run_id}"}}
                    response = send(client, "POST", f"{playbook}/runs/{run_id}/events", json=body)
                    if response.status_code not in (200, 404):  # 404: the published event woke it already
                        raise AssertionError(response.text)

        in_threads(starters, waker)
    with server.client() as client:
        deadline = time.monotonic() + BOUND_SECONDS
        while still_started(client, playbook):
            if time.monotonic() > deadline:
                raise AssertionError(f"listening runs still started after {BOUND_SECONDS} s")
            time.sleep(0.1)
    woken_in = time.perf_counter() - began
    print(f"  woke all {count} in {woken_in:.1f} s ({count / woken_in:.0f} runs/s) through {path}")
    print(f"  server VmRSS after waking: {rss_mb(server.process.pid):.0f} MB")


# -- the run -------------------------------------------------------------------------------------------------------


@contextmanager
def ledger_server(
    ledger: str, folder: Path, database_url: str, extra: Mapping[str, str] | None = None
) -> Iterator[tuple[ServerProcess, Callable[[], Any]]]:
    """A server on a fresh ledger (with `extra` settings), and how to open a fresh ledger of the same kind for the
    raw append rate."""
    with ExitStack() as stack:
        settings: dict[str, str] = {}
        if ledger == "postgres":
            name = f"bench_wf_{secrets.token_hex(6)}"
            asyncio.run(_admin(database_url, f"CREATE DATABASE {name}"))
            stack.callback(lambda: asyncio.run(_admin(database_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
            url = f"{database_url.rpartition('/')[0]}/{name}"
            settings = {"DATABASE_URL": url, "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode()}
            schema = f"raw_{secrets.token_hex(4)}"
            asyncio.run(_admin(url, f"CREATE SCHEMA {schema}"))

            def open_raw() -> Any:
                return open_ledger(database_url=f"{url}?search_path={schema}")
        else:

            def open_raw() -> Any:
                return open_ledger(ledger_file=folder / "raw" / "ledger.db")

        server = start_server(folder / "server", {**settings, **(extra or {})})
        stack.callback(server.stop)
        yield server, open_raw


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def bench_ledger(ledger: str, options: argparse.Namespace) -> None:
    print(f"\n== {ledger}", flush=True)
    with (
        tempfile.TemporaryDirectory() as folder,
        ledger_server(ledger, Path(folder), options.database_url) as (
            server,
            open_raw,
        ),
    ):
        (Path(folder) / "raw").mkdir(exist_ok=True)
        with server.client() as client:
            playbook = new_playbook(client)
            create_computation(client, playbook, "echo", ECHO)
            for name, source in (("steps", STEPS), ("calls", CALLS), ("timer", TIMER), ("listens", LISTEN)):
                saved = client.post(f"{playbook}/definitions/workflow", json={"name": name, "source": source})
                if saved.status_code != 201:
                    raise AssertionError(saved.text)
        if "a" in options.parts:
            throughput_part(server, playbook, open_raw, options)
        if "b" in options.parts:
            print("(b) timer lateness")
            timer_lateness(server, playbook, options.timers, options.timer_rate)
        if "c" in options.parts:
            print("(c) runs waiting on listen")
            listeners(server, playbook, options.listeners)


def throughput_part(
    server: ServerProcess, playbook: str, open_raw: Callable[[], Any], options: argparse.Namespace
) -> None:
    """Part (a): the throughput and latency cases, beside the raw append rate of the same kind of store."""
    print(
        f"(a) throughput and latency: {options.processes} load processes of raw keep-alive sockets, one start"
        " request in flight on each\n"
        "    wf/s: runs / (first start sent to last run ended, seen in a response or read); p50/p99: a start\n"
        "    request sent to its full response, the run's end only when that response holds the ended run\n"
        "    (`started`: the answers that did not); end p50/p99: a start sent to its run's ended_at (every run\n"
        "    read afterwards, same clock)"
    )
    summary = throughput(server, playbook, options.runs, options.rounds, options.processes)
    raw = trio.run(raw_append_rates, open_raw, options.appends)
    print(f"  ledger raw appends/s (1 KB records, same run): 1 appender {raw[1]:,.0f}, 50 appenders {raw[50]:,.0f}")
    for name, (rate, appends) in summary.items():
        print(
            f"  {name}: {appends} appends a workflow; at 50 starters {rate:.1f} wf/s = {rate * appends:,.0f} "
            f"appends/s, {rate * appends / raw[50]:.2f} × the raw rate at 50 appenders"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--runs", type=int, default=50, help="runs a round with 50 starters (1 starter: a fifth, at least 10)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per case (median)")
    parser.add_argument("--processes", type=int, default=2, help="load processes for (a) (at most the starters)")
    parser.add_argument("--timers", type=int, default=200, help="runs waiting on wait: PT1S (full run: 1000)")
    parser.add_argument(
        "--timer-rate", type=float, default=10.0, help="runs started a second for (b)'s light load (default 10)"
    )
    parser.add_argument("--listeners", type=int, default=300, help="runs waiting on listen (full run: 10000)")
    parser.add_argument("--appends", type=int, default=500, help="appends per raw ledger measurement")
    parser.add_argument("--ledgers", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument(
        "--parts", default="abc", help="which parts to run: a (throughput), b (timer lateness), c (listens)"
    )
    options = parser.parse_args()
    for ledger in options.ledgers.split(","):
        bench_ledger(ledger.strip(), options)


if __name__ == "__main__":
    main()
