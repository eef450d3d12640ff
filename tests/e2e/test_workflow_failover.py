"""Two servers on one PostgreSQL ledger (issue 10) cut into one partition (`WORKFLOW_PARTITIONS=1`, issue 33):
only the holder of the partition runs workflows; the other takes starts all the same and hands them to the
holder (issue 33, "any server takes any request"). When the holder is SIGKILLed while runs wait on timers, the
standby takes the partition once its lease lapses (max(3 sweeps, 3 s), judged by the database clock) and
finishes every run exactly once; an event sent meanwhile, and starts, then run on it.

Time is only ever bounded by generous polls (`SETTLE_SECONDS`), never asserted."""

from __future__ import annotations

import base64
import secrets
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_status import status_of
from tests.e2e.test_workflow_crashes import (
    SETTLE_SECONDS,
    SWEEP,
    callee_ids,
    check_callees_once,
    check_once,
    history,
    kill,
    save_workflows,
    send,
    start_run,
    wait_ended,
    wait_until_waiting,
)
from tests.postgres_support import fresh_database

pytestmark = pytest.mark.postgres
WAITING_RUNS = 12
LATER = """document: { dsl: '1.0.3', namespace: failover, name: later, version: '1.0.0' }
do:
  - first: { set: '${ {"n": data["n"]} }' }
  - pause: { wait: PT5S }
  - last: { set: '${ {"n": data["n"] + 1} }' }
"""


def start_both(tmp_path: Path, settings: dict[str, str]) -> list[ServerProcess]:
    """Two server processes on the same database, started at once (each in a folder of its own)."""
    started: dict[int, ServerProcess] = {}
    failures: list[BaseException] = []

    def one(number: int) -> None:
        folder = tmp_path / f"server{number}"
        try:
            started[number] = start_server(folder, settings)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=one, args=(number,)) for number in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        for server in started.values():
            kill(server)
        raise failures[0]
    return [started[0], started[1]]


def settled_holder(servers: list[ServerProcess]) -> None:
    """Until the servers agree on the holder of the one partition (`GET /v1/status`: both alive, one holding it):
    the balance may hand it from the first to take it to the one whose share it is."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        statuses = [status_of(server) for server in servers]
        held = [status["partitions"] for status in statuses]
        if sorted(held) == [[], [0]] and all(len(status["servers"]) == 2 for status in statuses):
            shares = {entry["server"]: entry["partitions"] for entry in statuses[0]["servers"]}
            if shares == {entry["server"]: entry["partitions"] for entry in statuses[1]["servers"]}:
                return
        time.sleep(0.2)
    raise AssertionError(f"the servers did not agree on the partition's holder within {SETTLE_SECONDS} s")


def holder_and_standby(servers: list[ServerProcess], playbook: str) -> tuple[ServerProcess, ServerProcess, str]:
    """Which server holds the partition (`GET /v1/status`, once they agree), and a run started on the standby:
    it takes the start, never `unavailable`, and the holder runs it. Answers the run."""
    settled_holder(servers)
    holder = next(server for server in servers if status_of(server)["partitions"] == [0])
    standby = next(server for server in servers if server is not holder)
    run_id = str(uuid.uuid4())
    with standby.client() as client:
        response = client.post(f"{playbook}/definitions/workflow/short/run", json={"input": {"n": 1}, "run_id": run_id})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "started", response.text
    return holder, standby, run_id


@pytest.mark.slow(seconds=25)
def test_the_standby_takes_over_the_runs_of_a_killed_holder(tmp_path: Path) -> None:
    with fresh_database("wf_failover") as database_url:
        settings = {
            "DATABASE_URL": database_url,
            "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "WORKFLOW_SWEEP_INTERVAL": SWEEP,
            "WORKFLOW_PARTITIONS": "1",
        }
        servers = start_both(tmp_path, settings)
        try:
            with servers[0].client() as client:
                playbook = new_playbook(client)
                save_workflows(client, playbook)
                saved = client.post(f"{playbook}/definitions/workflow", json={"name": "later", "source": LATER})
                assert saved.status_code == 201, saved.text
            holder, standby, first = holder_and_standby(servers, playbook)

            with holder.client() as on_holder, standby.client() as on_standby:
                # The holder's runs progress; the standby reads them from the same ledger.
                progressed = [first]
                for _ in range(5):
                    run_id = str(uuid.uuid4())
                    start_run(on_holder, playbook, "short", {"n": 1}, run_id)
                    progressed.append(run_id)
                finished = wait_ended(on_standby, playbook, progressed)
                assert {run["status"] for run in finished.values()} == {"succeeded"}, finished

                # Runs waiting when the holder dies: timers, a child workflow on its timer, a listen.
                timers = [str(uuid.uuid4()) for _ in range(WAITING_RUNS)]
                for run_id in timers:
                    start_run(on_holder, playbook, "later", {"n": 1}, run_id)
                calls, listens = str(uuid.uuid4()), str(uuid.uuid4())
                start_run(on_holder, playbook, "calls", {"n": 1}, calls)
                start_run(on_holder, playbook, "listens", {"n": 1}, listens)
                wait_until_waiting(on_standby, playbook, calls, "/do/1/nested")
                wait_until_waiting(on_standby, playbook, listens, "/do/1/hear")
                event = {"event": {"type": "com.acme.go", "id": f"go-{listens}", "data": {"n": 7}}}
                statuses = [on_standby.get(f"{playbook}/runs/{run_id}").json()["status"] for run_id in timers]
                assert "started" in statuses, "the kill should find runs waiting on their timers"
            kill(holder)

            with standby.client() as client:
                # Sent again while the dead holder's lease lapses, within the bound.
                sent = send(client, "POST", f"{playbook}/runs/{listens}/events", json=event)
                assert sent.status_code == 200, sent.text
                after = str(uuid.uuid4())
                start_run(client, playbook, "short", {"n": 1}, after)
                ended = wait_ended(client, playbook, [*timers, calls, listens, after])
                assert {run["status"] for run in ended.values()} == {"succeeded"}, ended
                assert ended[listens]["output"] == {"heard": 7}
                assert ended[calls]["output"] == {"n": 2}
                assert {ended[run_id]["output"]["n"] for run_id in timers} == {2}
                for run_id in [*progressed, *timers, calls, listens, after]:
                    events = history(client, playbook, run_id)
                    check_once(events)
                    check_callees_once(client, playbook, events)
                    for callee in callee_ids(events):
                        check_once(history(client, playbook, callee))
            assert standby.stop() == 0, standby.log()
        finally:
            for server in servers:
                kill(server)
