"""Recall fair share: one playbook's slow view beside another playbook's runs and small view. Prints; asserts
nothing.

A real server (SQLite, `--workers` sandbox workers, 4 by default, so folds hold at most 2), at `LOG_LEVEL=debug`
for the sandbox pool's accounting lines. Playbook B has a trivial computation and a small view that counts its
events. Measured first alone, then while playbook A of the same org keeps a view of about 500 KB (written and
read back as JSON around every fold: the recall page's slow case) folding a stream of events, its backlog kept
at `--backlog` events or more by a publisher thread:

- B's run latency: `--runs` runs of the trivial computation, one after another; median and 90th percentile;
- B's view fold rate: `--rounds` rounds of `--burst` events published to B, each timed from its first publish
  until B's view has folded the burst; median events a second;
- A's fold rate meanwhile, and from the pool's accounting (one debug line each time it hands a worker to a
  job), from the start of A's load on, the most workers A's folds held at once, against the folds' limit.

A fold of A's view costs its JSON written and read back whole (about 0.3 s at 500 KB on an idle machine, and
several seconds on a loaded one), and a page checks its 2 seconds before each fold, so one fold job of A holds
its worker for a fold or a few: A's rate is low and its hand-overs few, by the recall page's rules.

The ratios are loaded over alone. Run from the repository root as `python -m benchmarks.recall_fair_share` (about
two minutes), or smaller: `python -m benchmarks.recall_fair_share --runs 10 --rounds 3`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conformance.computation.documents import HEAD
from tests.conformance.computation.documents import run as run_computation
from tests.conformance.computation.documents import saved as saved_computation
from tests.conformance.recall.documents import counting, publish, saved, standing_of
from tests.e2e.server_process import ServerProcess, start_server
from tests.security.test_recall_fair_share import LARGE_VIEW, QUICK_TYPE, SLOW_TYPE

ORG = "acme"
SLOW, QUICK = "slow-view", "quick-view"
POLL_SECONDS = 0.02


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run_latencies(client: httpx.Client, playbook: str, runs: int) -> list[float]:
    """Seconds each trivial run took, answered `succeeded`."""
    latencies = []
    for index in range(runs):
        began = time.perf_counter()
        response = run_computation(client, playbook, "echo", index)
        latencies.append(time.perf_counter() - began)
        assert response.status_code == 200 and response.json()["status"] == "succeeded", response.text
    return latencies


def fold_rates(client: httpx.Client, playbook: str, rounds: int, burst: int) -> list[float]:
    """Events a second B's view folded in each round, from the round's first publish until it folded them all."""
    rates = []
    for _ in range(rounds):
        target = standing_of(client, playbook, "small")["folded"] + burst
        began = time.perf_counter()
        for index in range(burst):
            publish(client, playbook, QUICK_TYPE, {"index": index})
        while standing_of(client, playbook, "small")["folded"] < target:
            time.sleep(POLL_SECONDS)
        rates.append(burst / (time.perf_counter() - began))
    return rates


class SlowLoad:
    """Keeps A's view folding: publishes to A whenever fewer than `backlog` of its events wait to be folded."""

    def __init__(self, server: ServerProcess, playbook: str, backlog: int) -> None:
        self.server, self.playbook, self.backlog = server, playbook, backlog
        self.published = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._publish, daemon=True)

    def _publish(self) -> None:
        with self.server.client() as client:
            while not self.stopping.is_set():
                folded = standing_of(client, self.playbook, "large")["folded"]
                while self.published - folded < self.backlog:
                    publish(client, self.playbook, SLOW_TYPE, {"index": self.published})
                    self.published += 1
                self.stopping.wait(0.2)

    def folded(self, client: httpx.Client) -> int:
        folded: int = standing_of(client, self.playbook, "large")["folded"]
        return folded


def pool_takes(server: ServerProcess) -> list[dict[str, Any]]:
    takes = []
    for line in server.log().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("pool") == "sandbox" and "owner_holds" in entry:
            takes.append(entry)
    return takes


def print_accounting(takes: list[dict[str, Any]], workers: int) -> None:
    """What the pool's accounting lines say from the start of A's load on."""
    if not takes:
        print("pool accounting: no hand-over logged")
        return
    slow_folds = [t for t in takes if t["playbook"] == SLOW and t["kind"] == "fold"]
    most = max((t["owner_folds"] for t in slow_folds), default=0)
    print(
        f"pool accounting from A's load on: {len(takes)} hand-overs ({len(slow_folds)} of A's folds) on {workers} "
        f"workers; A's folds held at most {most} at once, all folds at most {max(t['folds'] for t in takes)} "
        f"(limit {takes[0]['fold_limit']})"
    )


def measure(client: httpx.Client, quick: str, runs: int, rounds: int, burst: int) -> tuple[list[float], list[float]]:
    return run_latencies(client, quick, runs), fold_rates(client, quick, rounds, burst)


def report(label: str, latencies: list[float], rates: list[float]) -> tuple[float, float]:
    latency, rate = statistics.median(latencies), statistics.median(rates)
    print(
        f"{label:<26} B's run: median {latency * 1000:7.1f} ms, p90 {percentile(latencies, 0.9) * 1000:7.1f} ms;"
        f" B's view: median {rate:6.1f} events/s"
    )
    return latency, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=30)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recall-fair-share-") as folder:
        settings = {"COMPUTATION_WORKERS": str(arguments.workers), "LOG_LEVEL": "debug", "LOG_FORMAT": "json"}
        server = start_server(Path(folder), settings)
        try:
            with server.client() as client:
                slow, quick = (f"/v1/orgs/{ORG}/playbooks/{name}" for name in (SLOW, QUICK))
                for name in (SLOW, QUICK):
                    created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": name, "name": name})
                    assert created.status_code == 201, created.text
                saved(client, slow, "large", LARGE_VIEW)
                saved(client, quick, "small", counting(QUICK_TYPE))
                saved_computation(client, quick, "echo", HEAD + "def main(input):\n    return input\n")
                run_latencies(client, quick, 3)

                alone = report("alone", *measure(client, quick, arguments.runs, arguments.rounds, arguments.burst))

                mark = len(pool_takes(server))
                load = SlowLoad(server, slow, arguments.backlog)
                load.thread.start()
                while load.folded(client) < 1:
                    time.sleep(POLL_SECONDS)
                began, folded_before = time.perf_counter(), load.folded(client)
                loaded = report(
                    "beside A's 500 KB view", *measure(client, quick, arguments.runs, arguments.rounds, arguments.burst)
                )
                slow_rate = (load.folded(client) - folded_before) / (time.perf_counter() - began)
                load.stopping.set()
                load.thread.join()
            takes = pool_takes(server)[mark:]
            print_accounting(takes, arguments.workers)
            latency_ratio, rate_ratio = loaded[0] / alone[0], loaded[1] / alone[1]
            print(f"ratios (beside / alone): B's run latency x{latency_ratio:.2f}, B's view rate x{rate_ratio:.2f}")
            print(f"A's view meanwhile: {slow_rate:.1f} events/s folded")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
