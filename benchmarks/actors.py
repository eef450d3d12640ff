"""Actor benchmark: ask round trips and memory per idle actor, each beside a bare Trio baseline.

Run: `python -m benchmarks.actors [actors_http options]` (a few minutes: it ends with `benchmarks.actors_http`,
the same runtime through HTTP beside `/health`, and the server's memory per playbook and per waiting run). Prints
medians over several rounds and ratios against baselines measured in the same run (each round measures every
variant in turn; a ratio is the median of the per-round ratios); it asserts nothing.

- ask/s, 1 actor: one task asks one actor in a loop (default ask timeout, so its cost is included).
- ask/s, 100 actors: 100 tasks each ask their own actor concurrently.
- Baselines: a bare Trio task looping over a memory channel, the reply carried by an Event and a box;
  for thread actors also the bare pykka "token bridge" (reply callback → `TrioToken.run_sync_soon`).
- Memory per idle actor: `tracemalloc` bytes per actor (the Python heap: tasks, frames, channels,
  refs; one run, it barely varies) and RSS growth per actor (noisy: the allocator reuses freed memory;
  thread stacks only show here), for 10,000 idle actors (thread actors: 50, each is an OS thread).
- The runtime's own actors, on a fresh SQLite ledger with the real sandbox and workflow type: the Python heap
  held per playbook while 10,000 playbook actors are live (each started by a real command, which rebuilds its
  definitions from the ledger) and after they all passivated; and per run for 10,000 workflow runs that each
  took an input through their run actor and now wait (the run actors passivated: none is live).
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pykka
import trio
import trio.lowlevel
import trio.testing

from auto_runtime import __version__
from auto_runtime.actors import Actor, ActorRef, Registry, ThreadActor, ThreadActorRef
from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.document import WorkflowDocument, check_document
from auto_runtime.functions.workflow.engine.model import TimerFired
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.ledger import Ledger, PlaybookScope, open_ledger, uuid7
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.lifetime import Sandbox, open_sandbox
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.server_clock import WALL_CLOCK
from auto_runtime.workflow_host.run_store import Definition, RunStore
from benchmarks import actors_http

REPEATS = 5
ROUND_SECONDS = 0.15
IDLE_ACTORS = 10_000
IDLE_THREAD_ACTORS = 50
CONCURRENT = 100
PLAYBOOKS = 10_000
WAITING_RUNS = 10_000
MAX_DURATION_MS = 30 * 86_400_000
TWO_WAITS = (
    "document: { dsl: '1.0.3', namespace: bench, name: waits, version: '1.0.0' }\n"
    "do:\n  - a: { wait: { seconds: 3600 } }\n  - b: { wait: { seconds: 3600 } }\n  - done: { set: { done: true } }\n"
)


class Echo(Actor[int, int]):
    async def receive(self, message: int) -> int:
        return message


class ThreadEcho(ThreadActor[int, int]):
    def receive(self, message: int) -> int:
        return message


class BareChannelActor:
    """The baseline: a task over an unbounded memory channel; the reply is an Event and a box."""

    def __init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[tuple[int, list[int], trio.Event]](math.inf)

    async def serve(self) -> None:
        async for message, box, done in self.receive:
            box.append(message)
            done.set()

    async def ask(self, message: int) -> int:
        box: list[int] = []
        done = trio.Event()
        self.send.send_nowait((message, box, done))
        await done.wait()
        return box[0]


class BareTokenBridgeActor(pykka.ThreadingActor):
    """The thread baseline from the stack spike: pykka actor, reply callback via `run_sync_soon`."""

    use_daemon_thread = True

    def on_receive(self, message: Any) -> Any:
        payload, reply = message
        reply(payload)


async def bare_token_ask(ref: pykka.ActorRef[Any], message: int) -> int:
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    box: list[int] = []

    def reply(value: int) -> None:
        box.append(value)
        token.run_sync_soon(done.set)

    ref.tell((message, reply))
    await done.wait()
    return box[0]


Ask = Callable[[int], Awaitable[int]]


async def asks_per_second(askers: list[Ask]) -> float:
    """Total asks per second with one task per asker, each asking in a loop for ROUND_SECONDS."""
    counts = [0] * len(askers)
    deadline = time.perf_counter() + ROUND_SECONDS

    async def loop(index: int, ask: Ask) -> None:
        done = 0
        while time.perf_counter() < deadline:
            for _ in range(50):
                await ask(done)
                done += 1
        counts[index] = done

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for index, ask in enumerate(askers):
            nursery.start_soon(loop, index, ask)
    return sum(counts) / (time.perf_counter() - start)


async def interleaved_rates(variants: dict[str, list[Ask]]) -> dict[str, list[float]]:
    """Rounds that measure every variant in turn, so machine noise hits them alike."""
    for askers in variants.values():
        await asks_per_second(askers)
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(REPEATS):
        for name, askers in variants.items():
            rates[name].append(await asks_per_second(askers))
    return rates


async def bench_round_trips(count: int) -> dict[str, list[float]]:
    async with trio.open_nursery() as nursery:
        bare = [BareChannelActor() for _ in range(count)]
        for actor in bare:
            nursery.start_soon(actor.serve)
        refs = [ActorRef[int, int](f"echo{n}") for n in range(count)]
        for ref in refs:
            nursery.start_soon(ref.run, Echo)
        registry: Registry[int, int, int] = Registry("echo", lambda key: Echo(), max_live=count)
        await nursery.start(registry.run)
        pykka_refs = [BareTokenBridgeActor.start() for _ in range(count)]
        thread_refs = [ThreadActorRef[int, int](f"thread{n}") for n in range(count)]
        for thread_ref in thread_refs:
            nursery.start_soon(thread_ref.serve_life, ThreadEcho)

        def bridge(ref: pykka.ActorRef[Any]) -> Ask:
            return lambda message: bare_token_ask(ref, message)

        rates = await interleaved_rates(
            {
                "bare channel": [actor.ask for actor in bare],
                "trio actor": [ref.ask for ref in refs],
                "registry actor": [registry.ref(n).ask for n in range(count)],
                "bare token bridge": [bridge(ref) for ref in pykka_refs],
                "thread actor": [ref.ask for ref in thread_refs],
            }
        )
        for pykka_ref in pykka_refs:
            pykka_ref.stop()
        for thread_ref in thread_refs:
            thread_ref.request_stop()
        for ref in refs:
            ref.stop()
        nursery.cancel_scope.cancel()
    return rates


def median_ratio(rates: list[float], baseline: list[float]) -> float:
    return statistics.median(rate / base for rate, base in zip(rates, baseline, strict=True))


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def measure_idle(count: int, spawn: Callable[[trio.Nursery, int], Awaitable[None] | None]) -> tuple[float, float]:
    """(tracemalloc bytes, RSS bytes) per idle actor for `count` actors spawned by `spawn`."""
    gc.collect()
    async with trio.open_nursery() as nursery:
        await trio.testing.wait_all_tasks_blocked()
        rss_before = resident_bytes()
        tracemalloc.start()
        heap_before = tracemalloc.get_traced_memory()[0]
        for index in range(count):
            pending = spawn(nursery, index)
            if pending is not None:
                await pending
        await trio.testing.wait_all_tasks_blocked()
        heap_after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        rss_after = resident_bytes()
        nursery.cancel_scope.cancel()
    return (heap_after - heap_before) / count, (rss_after - rss_before) / count


async def bench_memory() -> dict[str, tuple[float, float]]:
    results: dict[str, tuple[float, float]] = {}
    keep: list[Any] = []

    def bare(nursery: trio.Nursery, index: int) -> None:
        actor = BareChannelActor()
        keep.append(actor)
        nursery.start_soon(actor.serve)

    def trio_actor(nursery: trio.Nursery, index: int) -> None:
        ref = ActorRef[int, int](f"idle{index}")
        keep.append(ref)
        nursery.start_soon(ref.run, Echo)

    registry: Registry[int, int, int] = Registry("idle", lambda key: Echo(), max_live=IDLE_ACTORS)

    async def registry_actor(nursery: trio.Nursery, index: int) -> None:
        if index == 0:
            await nursery.start(registry.run)
        registry.tell(index, index)

    def thread_actor(nursery: trio.Nursery, index: int) -> None:
        ref = ThreadActorRef[int, int](f"idle-thread{index}")
        keep.append(ref)
        nursery.start_soon(ref.serve_life, ThreadEcho)

    for name, spawn, count in [
        ("bare channel task", bare, IDLE_ACTORS),
        ("trio actor", trio_actor, IDLE_ACTORS),
        ("registry actor", registry_actor, IDLE_ACTORS),
        ("thread actor", thread_actor, IDLE_THREAD_ACTORS),
    ]:
        results[name] = await measure_idle(count, spawn)
        keep.clear()
    return results


async def heap_now() -> int:
    gc.collect()
    await trio.testing.wait_all_tasks_blocked()
    return tracemalloc.get_traced_memory()[0]


async def bench_playbook_actors(ledger: Ledger, sandbox: Sandbox) -> dict[str, float]:
    """Heap per playbook with 10,000 live playbook actors, and after they passivated (asked to, as the idle sweep
    and the live bound ask them)."""
    types = function_types(WorkflowType(sandbox.engine, sandbox.checkers))
    definitions = DefinitionRegistry(ledger, types, ActorLimits(idle_seconds=3600.0, max_live=PLAYBOOKS))
    async with definitions.actors.serving():
        tracemalloc.start()
        before = await heap_now()
        started = time.perf_counter()
        for index in range(PLAYBOOKS):
            with contextlib.suppress(Rejection):  # a real command: the actor starts, reads its definitions, answers
                await definitions.retire(PlaybookScope("bench", f"pb-{index:05d}"), "workflow", "none", "bench")
        took = time.perf_counter() - started
        live = await heap_now()
        assert definitions.actors.live_count == PLAYBOOKS
        for index in range(PLAYBOOKS):
            definitions.actors.passivate(("bench", f"pb-{index:05d}"))
        while definitions.actors.live_count:  # noqa: ASYNC110 - passivation is no event: polled
            await trio.sleep(0.05)
        passivated = await heap_now()
        tracemalloc.stop()
    return {
        "live": (live - before) / PLAYBOOKS,
        "passivated": (passivated - before) / PLAYBOOKS,
        "command ms": took * 1000 / PLAYBOOKS,
    }


async def bench_waiting_runs(ledger: Ledger, sandbox: Sandbox) -> dict[str, float]:
    """Heap per run for 10,000 workflow runs that took an input through their run actor and wait again."""
    document = check_document(TWO_WAITS, MAX_DURATION_MS)
    assert isinstance(document, WorkflowDocument)
    definition = Definition("waits", 1, document.value)
    store = RunStore(
        ledger,
        sandbox.engine,
        runtime_version=__version__,
        max_duration_ms=MAX_DURATION_MS,
        workers=sandbox.pool.workers,
    )
    scope = PlaybookScope("bench", "runs")
    async with store.playbooks.serving():
        await store.start_run(scope, str(uuid7()), definition, {}, "bench")  # the document kept once, the pool warm
        tracemalloc.start()
        before = await heap_now()
        started = time.perf_counter()
        for _ in range(WAITING_RUNS):
            run_id = str(uuid7())
            await store.start_run(scope, run_id, definition, {}, "bench")
            (wait,) = [
                row for row in await ledger.due_work.entries_of_run(scope, run_id) if row.payload == {"purpose": "wait"}
            ]
            applied = await store.apply_input(scope, run_id, TimerFired(str(uuid7()), WALL_CLOCK.now_ms(), wait.key))
            assert not applied.stale and applied.status is None
        took = time.perf_counter() - started
        waiting = await heap_now()  # every task blocked: the last run actor has passivated
        assert store.runs.live_count == 0
        tracemalloc.stop()
    return {"waiting": (waiting - before) / WAITING_RUNS, "start+input ms": took * 1000 / WAITING_RUNS}


async def bench_runtime_actors() -> tuple[dict[str, float], dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="actors-bench-") as folder:
        cache = Path.home() / ".auto-runtime" / "cache"
        async with (
            open_sandbox(cache, 1) as sandbox,
            open_ledger(Path(folder) / "ledger.db", None, RUNTIME_PROJECTIONS) as ledger,
        ):
            playbooks = await bench_playbook_actors(ledger, sandbox)
            runs = await bench_waiting_runs(ledger, sandbox)
    return playbooks, runs


async def main() -> None:
    started = time.perf_counter()
    print(f"actor benchmark: median of {REPEATS} rounds of {ROUND_SECONDS}s; pid {os.getpid()}")
    for count in (1, CONCURRENT):
        rates = await bench_round_trips(count)
        baseline = rates["bare channel"]
        bridge = rates["bare token bridge"]
        label = "1 actor, sequential" if count == 1 else f"{count} actors, {count} concurrent askers"
        print(f"\nask round trips, {label} (ratios: median of per-round ratios)")
        print(f"  {'path':<20} {'asks/s':>10} {'vs bare channel':>16} {'vs token bridge':>16}")
        for name, samples in rates.items():
            print(
                f"  {name:<20} {statistics.median(samples):>10,.0f}"
                f" {median_ratio(samples, baseline):>15.2f}x {median_ratio(samples, bridge):>15.2f}x"
            )
    memory = await bench_memory()
    baseline_heap = memory["bare channel task"][0]
    print(f"\nmemory per idle actor ({IDLE_ACTORS:,} actors; thread actors: {IDLE_THREAD_ACTORS})")
    print(f"  {'kind':<20} {'heap bytes':>11} {'RSS bytes':>10} {'heap vs bare':>13}")
    for name, (heap, rss) in memory.items():
        print(f"  {name:<20} {heap:>11,.0f} {rss:>10,.0f} {heap / baseline_heap:>12.2f}x")
    playbooks, runs = await bench_runtime_actors()
    print("\nruntime actors (SQLite ledger, real sandbox): Python heap per playbook / run")
    print(f"  {PLAYBOOKS:,} playbook actors live:        {playbooks['live']:>9,.0f} bytes each")
    print(f"  the same after passivation:            {playbooks['passivated']:>9,.0f} bytes each")
    print(f"  one command that starts an actor:      {playbooks['command ms']:>9.2f} ms")
    print(f"  {WAITING_RUNS:,} waiting workflow runs:       {runs['waiting']:>9,.0f} bytes each (0 run actors live)")
    print(f"  one start and one input, per run:      {runs['start+input ms']:>9.2f} ms")
    print(f"\ntook {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    trio.run(main)
    print("\n" + "-" * 40 + " the same runtime through HTTP (benchmarks.actors_http)")
    actors_http.main(sys.argv[1:])
