"""`/health` while the server reads large bodies, beside the same server at rest. Prints; asserts nothing.

    python -m benchmarks.health_under_attack [--rounds N] [--bodies N] [--csv-megabytes N]

Two attacks on one real server (SQLite ledger, local mode), each `--rounds` times (3 by default):

- `nested JSON`: `--bodies` (8) bodies of 1 MiB sent at once to `create_playbook`, each a playbook whose `name`
  is brackets nested half a million deep (`422 invalid_input` at `/name`);
- `dataset CSV`: one valid CSV of `--csv-megabytes` (29) MB uploaded to `upload_dataset` (`200` and its
  summary; the first round reads and keeps it, a later round of the same bytes answers the kept summary, so
  every round uploads a CSV of its own).

A probe thread asks `/health` over one keep-alive connection, one request after another, while the attack's
requests are in flight; the same probe runs first against the server at rest, for `REST_SECONDS`. Printed for
each: the median and the longest `/health`, and their ratios to the server at rest (the issue's bar: the
longest under 100 ms), and how long the attack took.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.e2e.server_process import ServerProcess, start_server

ORG = "bench"
PLAYBOOK = "bench-datasets"
JSON = {"Content-Type": "application/json"}
MAX_JSON_BODY = 1_048_576
REST_SECONDS = 10.0
"""How long the server at rest is probed: long enough that its longest `/health` shows the machine's own
hiccups (other processes, the scheduler), which the attacks' longest ones include too."""
CLIENT_TIMEOUT_SECONDS = 300.0
"""A bound on any one request, far past what either attack takes (not a measurement)."""


def nested_name_body(size: int = MAX_JSON_BODY) -> bytes:
    """A `create_playbook` body of exactly `size` bytes whose `name` is nested brackets."""
    head, tail = b'{"playbook": "pb-nested", "name": ', b"}"
    depth = (size - len(head) - len(tail)) // 2
    return head + b"[" * depth + b"]" * depth + tail


def valid_csv(megabytes: int, salt: int) -> bytes:
    """A valid daily dataset of about `megabytes` MB: 1,000 series, each day's rows in turn."""
    lines = ["period,series,units"]
    size = len(lines[0]) + 1
    day = 0
    while size < megabytes * 1_000_000:
        date = time.strftime("%Y-%m-%d", time.gmtime(946_684_800 + day * 86_400))
        for series in range(1_000):
            line = f"{date},s{series:04d},{(day * 7 + series + salt) % 1000}.5"
            lines.append(line)
            size += len(line) + 1
        day += 1
    return ("\n".join(lines) + "\n").encode()


class HealthProbe:
    """Asks `/health` one request after another on its own keep-alive connection until stopped."""

    def __init__(self, base_url: str) -> None:
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._client = httpx.Client(base_url=base_url, timeout=CLIENT_TIMEOUT_SECONDS)
        self._thread = threading.Thread(target=self._run, name="health-probe", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            response = self._client.get("/health")
            if response.status_code != 200:
                raise AssertionError(f"/health answered {response.status_code}")
            self.latencies.append(time.perf_counter() - started)

    def __enter__(self) -> HealthProbe:
        self._client.get("/health")
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._client.close()


def at_rest(base_url: str) -> list[float]:
    with HealthProbe(base_url) as probe:
        time.sleep(REST_SECONDS)
    return probe.latencies


def under_attack(base_url: str, attack: Callable[[], None]) -> tuple[list[float], float]:
    """The `/health` latencies while `attack` runs, and how long it ran."""
    with HealthProbe(base_url) as probe:
        started = time.perf_counter()
        attack()
        took = time.perf_counter() - started
    return probe.latencies, took


def nested_json_attack(base_url: str, bodies: int) -> Callable[[], None]:
    body = nested_name_body()

    def send(_: int) -> None:
        with httpx.Client(base_url=base_url, timeout=CLIENT_TIMEOUT_SECONDS) as client:
            response = client.post(f"/v1/orgs/{ORG}/playbooks", content=body, headers=JSON)
        if response.status_code != 422:
            raise AssertionError(f"the nested body answered {response.status_code}: {response.text[:300]}")

    def attack() -> None:
        with ThreadPoolExecutor(bodies) as pool:
            list(pool.map(send, range(bodies)))

    return attack


def dataset_attack(base_url: str, data: bytes) -> Callable[[], None]:
    digest = hashlib.sha256(data).hexdigest()

    def attack() -> None:
        with httpx.Client(base_url=base_url, timeout=CLIENT_TIMEOUT_SECONDS) as client:
            response = client.put(
                f"/v1/orgs/{ORG}/playbooks/{PLAYBOOK}/datasets/{digest}",
                content=data,
                headers={"Content-Type": "text/csv"},
            )
        if response.status_code != 200:
            raise AssertionError(f"the dataset answered {response.status_code}: {response.text[:300]}")

    return attack


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def report(name: str, rest: list[float], attacked: list[list[float]], took: list[float]) -> None:
    rest_median, rest_longest = statistics.median(rest), max(rest)
    medians = [statistics.median(latencies) for latencies in attacked]
    longests = [max(latencies) for latencies in attacked]
    median, longest = statistics.median(medians), statistics.median(longests)
    print(f"{name}: {len(attacked)} rounds, attack took {statistics.median(took):.2f} s (median)")
    print(f"  /health at rest        median {milliseconds(rest_median)}  longest {milliseconds(rest_longest)}")
    print(
        f"  /health under attack   median {milliseconds(median)}  longest {milliseconds(longest)} "
        f"(median of rounds; worst round {milliseconds(max(longests))}, probes {sum(map(len, attacked))})"
    )
    print(f"  ratio to rest          median {median / rest_median:8.1f} x  longest {longest / rest_longest:8.1f} x")


def run(server: ServerProcess, rounds: int, bodies: int, csv_megabytes: int) -> None:
    base_url = server.base_url
    with httpx.Client(base_url=base_url, timeout=CLIENT_TIMEOUT_SECONDS) as client:
        created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": PLAYBOOK, "name": "Datasets"})
        created.raise_for_status()
    rest = at_rest(base_url)
    attacked: list[list[float]] = []
    took: list[float] = []
    for _ in range(rounds):
        latencies, seconds = under_attack(base_url, nested_json_attack(base_url, bodies))
        attacked.append(latencies)
        took.append(seconds)
    report(f"nested JSON ({bodies} x 1 MiB to create_playbook)", rest, attacked, took)
    attacked, took = [], []
    for salt in range(rounds):
        data = valid_csv(csv_megabytes, salt)
        latencies, seconds = under_attack(base_url, dataset_attack(base_url, data))
        attacked.append(latencies)
        took.append(seconds)
    report(f"dataset CSV ({len(data) / 1_000_000:.1f} MB to upload_dataset)", rest, attacked, took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bodies", type=int, default=8)
    parser.add_argument("--csv-megabytes", type=int, default=29)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = start_server(Path(folder) / "server", {"LEDGER_FILE": str(Path(folder) / "ledger.db")})
        try:
            run(server, arguments.rounds, arguments.bodies, arguments.csv_megabytes)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
