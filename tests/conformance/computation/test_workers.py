"""Spec, computation-format.md: "Bounds" (duration, runs at once), "How a run is carried out" (workers), and
the `unavailable` endings of "How a run ends", on a real server started with `COMPUTATION_WORKERS=1`.

Nothing here asserts a time, and only outcomes are compared. The program that holds the worker (`WAITS_FOREVER`)
spends its work slowly, but on a quiet machine it may use it up before its 10 seconds: the crowd below is made
so that some run passes its 10 seconds on a slow machine and on a fast one alike (see `Crowd`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.computation.documents import (
    HEAD,
    RUNS_FOREVER,
    WAITS_FOREVER,
    output_of,
    run,
    saved,
)
from tests.conformance.computation.example import EXAMPLE, INVOICES
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess, start_server

PAST_TIME = "The run did not finish within the 10 seconds a run may take"
USED_UP = "The program used up its 10,000,000,000 units of work and was stopped"
NO_WORKER = "No worker became free within the 10 seconds a run may take; the server runs 1 at once"
WAITING_RUNS = 6


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of its own that runs one computation at a time."""
    server = start_server(Path(tmp_path_factory.mktemp("one-worker")), {"COMPUTATION_WORKERS": "1"})
    yield server
    assert server.stop() == 0, server.log()


@pytest.fixture(scope="module")
def playbook(one_worker: ServerProcess) -> str:
    with one_worker.client() as client:
        playbook_url = new_playbook(client)
        saved(client, playbook_url, "echo", HEAD + "def main(input):\n    return input\n")
        saved(client, playbook_url, "forever", RUNS_FOREVER)
        saved(client, playbook_url, "waits", WAITS_FOREVER)
        saved(client, playbook_url, "invoice-aging", EXAMPLE)
        saved(
            client,
            playbook_url,
            "fills",
            HEAD + "def main(input):\n    kept = []\n    while True:\n        kept.append(bytearray(20000000))\n",
        )
        saved(client, playbook_url, "raises", HEAD + "def main(input):\n    raise ValueError('no')\n")
    return playbook_url


def unavailable(response: httpx.Response) -> str:
    """`unavailable` (503) with `Retry-After: 5`: its detail."""
    body = problem(response, 503, "unavailable")
    assert response.headers.get("retry-after") == "5", response.headers
    assert "kind" not in body
    detail: str = body["detail"]
    return detail


def in_parallel(server: ServerProcess, playbook: str, name: str, count: int) -> list[httpx.Response]:
    """`count` runs of `name` sent at once, each on its own connection."""
    responses: list[httpx.Response | None] = [None] * count
    barrier = threading.Barrier(count)

    def send(index: int) -> None:
        with server.client() as client:
            barrier.wait()
            responses[index] = run(client, playbook, name, index)

    threads = [threading.Thread(target=send, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(response is not None for response in responses)
    return [response for response in responses if response is not None]


# Fast: the worker is replaced after a bad run, and a run waits for a worker


@pytest.mark.parametrize("bad", ["forever", "fills"])
def test_a_worker_is_replaced_after_a_run_it_had_to_stop(one_worker: ServerProcess, playbook: str, bad: str) -> None:
    """A worker is ended after a run it had to stop or that ran out of memory; the next run on a one-worker
    server still succeeds, on its replacement."""
    with one_worker.client() as client:
        problem(run(client, playbook, bad), 409, "conflict", "unworkable")
        assert output_of(run(client, playbook, "echo", {"after": bad})) == {"after": bad}
        problem(run(client, playbook, bad), 409, "conflict", "unworkable")
        assert output_of(run(client, playbook, "echo", [1])) == [1]


def test_a_run_that_raised_keeps_its_worker_serving(one_worker: ServerProcess, playbook: str) -> None:
    """A program that raised ends `unworkable`; the runs after it succeed."""
    with one_worker.client() as client:
        for _ in range(3):
            problem(run(client, playbook, "raises"), 409, "conflict", "unworkable")
            assert output_of(run(client, playbook, "echo", "next")) == "next"


def test_a_run_waits_for_a_worker(one_worker: ServerProcess, playbook: str) -> None:
    """Runs at once: `COMPUTATION_WORKERS`; a run waits for a worker within its 10 seconds."""
    responses = in_parallel(one_worker, playbook, "echo", 5)
    assert sorted(output_of(response) for response in responses) == [0, 1, 2, 3, 4]


def test_the_same_input_gives_the_same_work_on_another_server(
    one_worker: ServerProcess, local_server: ServerProcess, playbook: str
) -> None:
    """The same input gives the same output, and spends the same work, on every server that runs the same
    sandbox build: a server with one worker and a server with four."""
    records: list[dict[str, Any]] = []
    outputs: list[Any] = []
    for server, playbook_url in ((one_worker, playbook), (local_server, None)):
        with server.client() as client:
            if playbook_url is None:
                playbook_url = new_playbook(client)
                saved(client, playbook_url, "invoice-aging", EXAMPLE)
            response = run(client, playbook_url, "invoice-aging", INVOICES)
            outputs.append(output_of(response))
            records.append(client.get(f"{playbook_url}/runs/{response.json()['run_id']}").json()["record"])
    assert outputs[0] == outputs[1]
    assert records[0]["work"] == records[1]["work"]
    assert records[0]["sandbox"] == records[1]["sandbox"]


# Slow: the 10 seconds


@dataclass
class Crowd:
    """Runs of `WAITS_FOREVER` on the one-worker server: the holder's, then `WAITING_RUNS` more at once, sent once
    the holder's run is recorded as started (so their 10 seconds end after the holder's); and one run of another
    program after them all.

    The runs take the worker one after another. On a machine where the program outlasts 10 s, the run that took
    the worker first passes its 10 seconds; where it uses up its work sooner (a quiet machine: about 8 s), it ends
    `unworkable` and the next run takes the worker before its own 10 seconds end (they began later) and passes
    them, since its work would last as long again. Either way one run ends past its time and the runs left wait
    and end for want of a worker. A run is recorded before it asks for a worker, so the tests do not rely on
    which of the crowd took the worker first."""

    holder: httpx.Response
    waiting: list[httpx.Response]
    after: httpx.Response

    def endings(self) -> list[str]:
        """Each run's detail: an `unavailable` one's, or `USED_UP` for a run that used up its work first."""
        return [ending(response) for response in (self.holder, *self.waiting)]


def ending(response: httpx.Response) -> str:
    """The detail of a crowd's run: `unavailable` (503, `Retry-After: 5`, no kind), or `conflict`, `unworkable`
    with exactly `USED_UP`."""
    if response.status_code == 409:
        body = problem(response, 409, "conflict", "unworkable")
        assert body["detail"] == USED_UP, body
        return USED_UP
    return unavailable(response)


@pytest.fixture(scope="module")
def crowd(one_worker: ServerProcess, playbook: str) -> Crowd:
    """The holder starts; once its run is recorded as started, `WAITING_RUNS` more runs of the same program
    are sent at once. Then one more run of another program, once all have ended."""
    box: list[httpx.Response] = []

    def hold() -> None:
        with one_worker.client() as client:
            box.append(run(client, playbook, "waits", "holder"))

    holder = threading.Thread(target=hold)
    holder.start()
    with one_worker.client() as client:
        for _ in range(500):
            started = client.get(f"{playbook}/runs", params={"status": "started", "name": "waits"}).json()["runs"]
            if started:
                break
            time.sleep(0.02)
        assert started, "the holder's run was never recorded as started"
        waiting = in_parallel(one_worker, playbook, "waits", WAITING_RUNS)
        holder.join()
        after = run(client, playbook, "echo", "after")
    return Crowd(box[0], waiting, after)


@pytest.mark.slow
def test_a_run_past_its_10_seconds_is_unavailable(crowd: Crowd) -> None:
    """The run passed its 10 seconds: `unavailable` (503), `Retry-After: 5`, `The run did not finish within
    the 10 seconds a run may take`: a run that took the only worker (see `Crowd`)."""
    assert PAST_TIME in crowd.endings(), crowd.endings()


@pytest.mark.slow
def test_no_worker_free_within_10_seconds_is_unavailable(crowd: Crowd) -> None:
    """No worker was free within the run's 10 seconds: `unavailable` (503), `Retry-After: 5`, `No worker
    became free within the 10 seconds a run may take; the server runs N at once`. The time spent waiting
    counts toward the 10 seconds, so a run that got the worker late ends past its time."""
    endings = crowd.endings()
    assert set(endings) <= {PAST_TIME, NO_WORKER, USED_UP}, endings
    assert NO_WORKER in endings, endings


@pytest.mark.slow
def test_the_worker_is_replaced_after_a_run_past_its_time(crowd: Crowd) -> None:
    """A worker is ended after a run it had to stop for time; the next run on the one-worker server succeeds."""
    assert output_of(crowd.after) == "after"


@pytest.mark.slow
def test_unavailable_runs_are_listed_without_a_kind(one_worker: ServerProcess, playbook: str, crowd: Crowd) -> None:
    """`list_runs` shows each as rejected, `unavailable`; `get_run` has the detail."""
    with one_worker.client() as client:
        runs = client.get(f"{playbook}/runs", params={"name": "waits", "limit": 100}).json()["runs"]
        assert len(runs) == 1 + WAITING_RUNS
        used_up = {"reason": "conflict", "kind": "unworkable"}
        assert all(listed["rejection"] in ({"reason": "unavailable"}, used_up) for listed in runs), runs
        unavailable_runs = [listed for listed in runs if listed["rejection"] == {"reason": "unavailable"}]
        assert len(unavailable_runs) >= WAITING_RUNS, runs
        details = [client.get(f"{playbook}/runs/{listed['run_id']}").json()["rejection"] for listed in unavailable_runs]
        assert {"reason": "unavailable", "detail": PAST_TIME} in details, details
        assert all(
            detail in ({"reason": "unavailable", "detail": d} for d in (PAST_TIME, NO_WORKER)) for detail in details
        )


@pytest.mark.slow
def test_a_worker_ends_after_its_1000th_run_and_runs_go_on(one_worker: ServerProcess, playbook: str) -> None:
    """A worker is ended after its 1,000th run: 1,001 runs in a row on the one-worker server cross that
    point, and each succeeds with the same output and the same work."""
    run_ids: list[str] = []
    failures: list[str] = []
    lock = threading.Lock()
    remaining = iter(range(1001))

    def send() -> None:
        with one_worker.client() as client:
            while True:
                with lock:
                    index = next(remaining, None)
                if index is None:
                    return
                response = run(client, playbook, "invoice-aging", INVOICES)
                with lock:
                    if response.status_code == 200 and response.json()["status"] == "succeeded":
                        run_ids.append(response.json()["run_id"])
                    else:
                        failures.append(response.text)

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(run_ids) == 1001
    with one_worker.client() as client:
        sample = [client.get(f"{playbook}/runs/{run_id}").json() for run_id in run_ids[::50] + run_ids[-3:]]
    assert len({compact_output(read["output"]) for read in sample}) == 1
    assert len({read["record"]["work"] for read in sample}) == 1


def compact_output(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
