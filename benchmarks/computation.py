"""Computation runs through the sandbox pool, beside the bare Wasmtime floor. Prints; asserts nothing.

The sandbox half only: runs a second and p50/p99 latency of a trivial program and of the spec's example
(4 invoices) through `SandboxPool` with 1 and 4 workers, and the floor: a bare loop of fresh store +
instantiate + `_start` of the same program with the same heap, no prelude, bridge or pool.
Each case runs in 3 rounds of 1.5 s; the rate printed is the median of the rounds (the machine may be
shared). Run as `python benchmarks/computation.py` (about 40 s).
"""

from __future__ import annotations

import gc
import json
import statistics
import tempfile
import time
from pathlib import Path

import trio
import wasmtime

from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation
from auto_runtime.sandbox.limits import HEAP_SIZE, MEMORY_BYTES
from auto_runtime.sandbox.pool import SandboxPool

ROUNDS = 3
SECONDS_PER_ROUND = 1.5
TRIVIAL = "def main(input):\n    return input\n"
EXAMPLE = """BUCKETS = (30, 60, 90)

def bucket_of(days):
    for index, limit in enumerate(BUCKETS):
        if days <= limit:
            return index
    return len(BUCKETS)

def main(input):
    by_customer = {}
    for invoice in input["invoices"]:
        sums = by_customer.setdefault(invoice["customer"], [0, 0, 0, 0])
        sums[bucket_of(invoice["days_overdue"])] += invoice["amount_cents"]
    customers = []
    for name in sorted(by_customer):
        sums = by_customer[name]
        total = sum(sums)
        customers.append({
            "customer": name,
            "buckets_cents": sums,
            "total_cents": total,
            "late_permille": None if total == 0 else (total - sums[0]) * 1000 // total,
        })
    return {"customers": customers, "total_cents": sum(c["total_cents"] for c in customers)}
"""
INVOICES = {
    "invoices": [
        {"customer": "northwind", "amount_cents": 129900, "days_overdue": 12},
        {"customer": "northwind", "amount_cents": 45050, "days_overdue": 75},
        {"customer": "blue-harbor", "amount_cents": 980000, "days_overdue": 0},
        {"customer": "northwind", "amount_cents": 7300, "days_overdue": 120},
    ]
}
CASES = {"trivial": (TRIVIAL, 1), "example": (EXAMPLE, INVOICES)}


def floor(engine: SandboxEngine, program: str, value: object) -> list[float]:
    """Bare fresh store + instantiate + `_start` of `program` calling `main` on a literal, one thread."""
    code = f"{program}\nmain({value!r})\n"
    latencies: list[float] = []
    until = time.monotonic() + SECONDS_PER_ROUND
    while time.monotonic() < until:
        began = time.perf_counter()
        store = wasmtime.Store(engine.engine)
        store.set_limits(memory_size=MEMORY_BYTES, instances=1, memories=1)
        store.set_fuel(10**10)
        store.set_epoch_deadline(10**6)
        wasi = wasmtime.WasiConfig()
        wasi.argv = ["micropython", "-X", f"heapsize={HEAP_SIZE}", "-c", code]
        store.set_wasi(wasi)
        instance = engine.pre.instantiate(store)
        instance.exports(store)["_start"](store)
        del instance, store
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


def summary(name: str, rounds: list[list[float]]) -> float:
    """Print the median rate of the rounds and the p50 and p99 of every run; return the rate."""
    rate = statistics.median(len(latencies) / SECONDS_PER_ROUND for latencies in rounds)
    cuts = statistics.quantiles([latency for latencies in rounds for latency in latencies], n=100)
    print(f"  {name:<24} {rate:8.1f} runs/s   p50 {cuts[49] * 1000:7.2f} ms   p99 {cuts[98] * 1000:7.2f} ms")
    return rate


async def main() -> None:
    engine = SandboxEngine(Path(tempfile.mkdtemp(prefix="auto-runtime-bench-")))
    try:
        for case, (program, value) in CASES.items():
            print(f"{case}:")
            base = summary("bare wasmtime (floor)", [floor(engine, program, value) for _ in range(ROUNDS)])
            for workers in (1, 4):
                pool = SandboxPool(engine, workers)
                try:
                    rounds = [await through_pool(pool, program, value, workers) for _ in range(ROUNDS)]
                    rate = summary(f"pool, {workers} worker(s)", rounds)
                finally:
                    pool.close()
                print(f"  {'':<24} {rate / base:8.2f} x the floor")
    finally:
        engine.close()
        gc.collect()


if __name__ == "__main__":
    trio.run(main)
