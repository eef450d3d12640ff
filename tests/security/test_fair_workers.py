"""Fair sandbox workers, end to end: with every worker busy on one org's long runs and more of them queued,
another org's trivial run is served by the next worker that frees, before the busy org's queued runs.

A server of its own with `COMPUTATION_WORKERS=2`, on SQLite, whose one writer gives every record its place
in one order (`global_position`). Org A sends `LONG_RUNS` runs of a program that loops until its work runs
out (about half a second each on the machine measured: its 10,000,000,000 units end it long before its 10
seconds), all at once; once every one is recorded as started (each then holds a worker or waits for one),
org B sends one trivial run. The evidence is the ledger's order, not a time: how many of A's runs recorded
their ending between B's `run_started` and B's `run_succeeded`. A fair queue hands B the first of the two
busy workers that frees, so at most one of A's runs per worker ends in between, and one more at most that
freed its worker in the instant between B's start being recorded and B joining the queue; a queue in arrival
order would first serve every A run queued before B.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.computation.documents import HEAD, RUNS_FOREVER, output_of, run, saved
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess, start_server

WORKERS = 2
LONG_RUNS = 20
USED_UP = "The program used up its 10,000,000,000 units of work and was stopped"
NO_WORKER = "No worker became free within the 10 seconds a run may take; the server runs 2 at once"
PAST_TIME = "The run did not finish within the 10 seconds a run may take"
POLLS = 3000
"""How often to look for A's runs to be recorded as started before giving up (a liveness bound)."""


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp("fair-workers"))
    server = start_server(
        folder, {"COMPUTATION_WORKERS": str(WORKERS), "LEDGER_FILE": str(folder / "data" / "ledger.db")}
    )
    yield server
    assert server.stop() == 0, server.log()


def listed(client: httpx.Client, playbook: str, name: str) -> list[dict[str, Any]]:
    response = client.get(f"{playbook}/runs", params={"name": name, "limit": 100})
    assert response.status_code == 200, response.text
    runs: list[dict[str, Any]] = response.json()["runs"]
    return runs


def positions(client: httpx.Client, playbook: str, event_type: str) -> dict[str, int]:
    """Each run's `event_type` event's place in the ledger's one order, by run id."""
    response = client.get(f"{playbook}/events", params={"type": event_type, "limit": 100})
    assert response.status_code == 200, response.text
    events = response.json()["events"]
    return {event["metadata"]["run_id"]: event["metadata"]["global_position"] for event in events}


@pytest.mark.slow(seconds=8)
def test_another_orgs_run_is_served_before_the_busy_orgs_queued_runs(two_workers: ServerProcess) -> None:
    with two_workers.client() as client:
        org_a = new_playbook(client, org="org-a")
        org_b = new_playbook(client, org="org-b")
        saved(client, org_a, "long", RUNS_FOREVER)
        saved(client, org_b, "echo", HEAD + "def main(input):\n    return input\n")
        assert output_of(run(client, org_b, "echo", "warm")) == "warm"

        answers: list[httpx.Response] = []
        lock = threading.Lock()
        barrier = threading.Barrier(LONG_RUNS)

        def send(index: int) -> None:
            with two_workers.client() as own:
                barrier.wait()
                answer = run(own, org_a, "long", index)
            with lock:
                answers.append(answer)

        senders = [threading.Thread(target=send, args=(index,)) for index in range(LONG_RUNS)]
        for sender in senders:
            sender.start()
        for _ in range(POLLS):
            if len(listed(client, org_a, "long")) == LONG_RUNS:
                break
            time.sleep(0.01)
        assert len(listed(client, org_a, "long")) == LONG_RUNS, "org A's runs were never all recorded as started"
        answer_b = run(client, org_b, "echo", "trivial")
        for sender in senders:
            sender.join()

        assert output_of(answer_b) == "trivial"
        run_b = answer_b.json()["run_id"]
        b_started = positions(client, org_b, "run_started")[run_b]
        b_ended = positions(client, org_b, "run_succeeded")[run_b]
        a_started = positions(client, org_a, "run_started")
        a_ended = positions(client, org_a, "run_rejected")

    assert len(a_started) == len(a_ended) == LONG_RUNS
    in_between = sorted(run_id for run_id, at in a_ended.items() if b_started < at < b_ended)
    queued_before_b = [run_id for run_id, at in a_started.items() if at < b_started and a_ended[run_id] > b_started]
    overtaken = [run_id for run_id in queued_before_b if a_ended[run_id] > b_ended]
    assert len(queued_before_b) >= WORKERS + 4, (
        f"only {len(queued_before_b)} of A's runs were still holding or waiting for a worker when B's run "
        "started: too few for the order to show"
    )
    assert len(in_between) <= WORKERS + 1, (
        f"{len(in_between)} of org A's runs ended between B's run starting and ending; a fair queue lets at most "
        f"one per worker ({WORKERS}) end first, and one that freed its worker before B joined the queue"
    )
    assert len(overtaken) >= len(queued_before_b) - WORKERS - 1
    assert len(answers) == LONG_RUNS
    for answer in answers:
        if answer.status_code == 409:
            assert problem(answer, 409, "conflict", "unworkable")["detail"] == USED_UP
        else:
            assert problem(answer, 503, "unavailable")["detail"] in {NO_WORKER, PAST_TIME}
            assert answer.headers["retry-after"] == "5"
