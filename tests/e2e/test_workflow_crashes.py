"""Workflow runs survive a SIGKILL of the server (issue 10): a run waiting on a timer, on calls (a computation
function and a child workflow whose child waits on a timer) and on an event finishes after a restart on the
same ledger with the history it would have had without the crash; starts killed mid-way leave runs that end.

Durability rules checked (`auto_runtime/workflow_host`): each applied input is one append with its due-work
changes, side effects wait in the outbox until the timer loop of the lease holder carries them out, so after a
crash nothing is lost (every run ends) and nothing is done twice (each `workflow_input_applied` key once, each
step once, each callee run started once). The restarted server waits for the dead holder's lease to lapse
(max(3 sweeps, 3 s)) and answers `unavailable` with `Retry-After` until then; the helpers send again.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import create_computation, new_playbook
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on

SWEEP = "PT0.2S"
SETTLE_SECONDS = 60.0
"""The bound of every poll: generous, never a timing claim (a busy machine only makes it slower)."""
ENDINGS = ("run_succeeded", "run_rejected", "run_failed")
ECHO = """---
language: python
---
def main(input):
    return input
"""
TIMER = """document: { dsl: '1.0.3', namespace: crash, name: timer, version: '1.0.0' }
do:
  - first: { set: '${ {"n": data["n"]} }' }
  - pause: { wait: PT2S }
  - last: { set: '${ {"n": data["n"] + 1} }' }
"""
CHILD = """document: { dsl: '1.0.3', namespace: crash, name: child, version: '1.0.0' }
do:
  - pause: { wait: PT2S }
  - done: { set: '${ {"child": data["n"]} }' }
"""
CALLS = """document: { dsl: '1.0.3', namespace: crash, name: calls, version: '1.0.0' }
do:
  - before:
      call: run_definition
      with: { type: computation, name: echo, input: '${ {"n": data["n"]} }' }
  - nested:
      call: run_definition
      with: { type: workflow, name: child, input: '${ {"n": data["n"]} }' }
  - after:
      call: run_definition
      with: { type: computation, name: echo, input: '${ {"n": data["child"] + 1} }' }
  - last: { set: '${ {"n": data["n"]} }' }
"""
LISTEN = """document: { dsl: '1.0.3', namespace: crash, name: listens, version: '1.0.0' }
do:
  - first: { set: '${ {"n": data["n"]} }' }
  - hear: { listen: { to: { one: { with: { type: com.acme.go } } } } }
  - last: { set: '${ {"heard": data[0]["n"]} }' }
"""
SHORT = """document: { dsl: '1.0.3', namespace: crash, name: short, version: '1.0.0' }
do:
  - first: { set: '${ {"n": data["n"]} }' }
  - echoed:
      call: run_definition
      with: { type: computation, name: echo, input: '${ {"n": data["n"]} }' }
  - pause: { wait: PT0.05S }
  - last: { set: '${ {"n": data["n"] + 1} }' }
"""
WORKFLOWS = {"timer": TIMER, "child": CHILD, "calls": CALLS, "listens": LISTEN, "short": SHORT}


# -- helpers the failover test and the benchmark share ------------------------------------------------------------


def send(client: httpx.Client, method: str, url: str, **options: Any) -> httpx.Response:
    """The request, sent again while the server answers 503 `unavailable` with `Retry-After` (it does not
    hold the workflow lease yet) or while it cannot be reached, within `SETTLE_SECONDS`."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        try:
            response = client.request(method, url, **options)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            continue
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        assert response.json()["reason"] == "unavailable", response.text
        assert "retry-after" in response.headers, response.headers
        time.sleep(min(float(response.headers["retry-after"]), 0.25))


def save_workflows(client: httpx.Client, playbook: str, names: tuple[str, ...] = tuple(WORKFLOWS)) -> None:
    create_computation(client, playbook, "echo", ECHO)
    for name in names:
        response = client.post(f"{playbook}/definitions/workflow", json={"name": name, "source": WORKFLOWS[name]})
        assert response.status_code == 201, response.text


def start_run(client: httpx.Client, playbook: str, name: str, value: Any, run_id: str) -> dict[str, Any]:
    response = send(
        client, "POST", f"{playbook}/definitions/workflow/{name}/run", json={"input": value, "run_id": run_id}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def history(client: httpx.Client, playbook: str, run_id: str, *, missing_ok: bool = False) -> list[dict[str, Any]]:
    """Every event of the run's history, oldest first (none for a run not recorded yet, with `missing_ok`: a
    callee whose caller waits for it is started by the outbox just after the caller's step was recorded)."""
    events: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 100}
    while True:
        response = client.get(f"{playbook}/runs/{run_id}/history", params=params)
        if missing_ok and response.status_code == 404 and not events:
            return []
        assert response.status_code == 200, response.text
        page = response.json()
        events.extend(page["events"])
        if not page["has_more"]:
            return events
        params["cursor"] = page["next_cursor"]


def wait_ended(client: httpx.Client, playbook: str, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each run as it ended, polling within `SETTLE_SECONDS` (a run still started then fails the test)."""
    ended: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + SETTLE_SECONDS
    while len(ended) < len(run_ids) and time.monotonic() < deadline:
        for run_id in run_ids:
            if run_id not in ended:
                run = client.get(f"{playbook}/runs/{run_id}").json()
                if run["status"] != "started":
                    ended[run_id] = run
        if len(ended) < len(run_ids):
            time.sleep(0.2)
    still = [run_id for run_id in run_ids if run_id not in ended]
    assert not still, f"{len(still)} run(s) still started after {SETTLE_SECONDS} s, such as {still[0]}"
    return ended


def wait_until_waiting(client: httpx.Client, playbook: str, run_id: str, reference: str) -> None:
    """Poll until the run's history shows `reference` waiting (its `step_waiting` is recorded)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        if any(
            event["type"] == "step_waiting" and event["data"]["reference"] == reference
            for event in history(client, playbook, run_id, missing_ok=True)
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"the run {run_id} never waited at {reference}")


def shape(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The history without ids and times: each event's type with the input kind or the step it names."""
    shown: list[tuple[str, str]] = []
    for event in events:
        data = event["data"] if isinstance(event["data"], dict) else {}
        if event["type"] == "workflow_input_applied":
            shown.append((event["type"], data["input"]["kind"]))
        else:
            shown.append((event["type"], str(data.get("reference", ""))))
    return shown


def check_once(events: list[dict[str, Any]]) -> None:
    """Nothing in one run's history happened twice: one start, one ending, each input key once, each step
    outcome once (a waiting step by its `times`)."""
    types = Counter(event["type"] for event in events)
    assert types["run_started"] == 1, shape(events)
    assert sum(types[ending] for ending in ENDINGS) == 1, shape(events)
    assert events[-1]["type"] in ENDINGS, shape(events)
    keys = Counter(event["data"]["input"]["key"] for event in events if event["type"] == "workflow_input_applied")
    assert [key for key, count in keys.items() if count > 1] == [], shape(events)
    steps = Counter(
        (event["type"], event["data"]["reference"], event["data"]["run"], event["data"]["times"])
        for event in events
        if event["type"].startswith("step_")
    )
    assert [step for step, count in steps.items() if count > 1] == [], shape(events)


def callee_ids(events: list[dict[str, Any]]) -> list[str]:
    return [
        event["data"]["run_id"] for event in events if event["type"] == "step_waiting" and "run_id" in event["data"]
    ]


def check_callees_once(client: httpx.Client, playbook: str, events: list[dict[str, Any]]) -> None:
    """Each callee of the run ended exactly once. It was started once, or again under its id when the kill landed
    while it ran (on a loaded machine a timer can fire before the kill, so a callee may be in flight): a started
    attempt the crash cut short has no ending, and the one after it ends."""
    for callee in callee_ids(events):
        types = Counter(event["type"] for event in history(client, playbook, callee))
        assert types["run_started"] >= 1, (callee, types)
        assert sum(types[ending] for ending in ENDINGS) == 1, (callee, types)


def kill(server: ServerProcess) -> None:
    server.process.kill()
    server.process.wait()


@contextlib.contextmanager
def ledger_settings(ledger: str) -> Iterator[dict[str, str]]:
    """The server settings for a ledger: SQLite (the folder's file) or a fresh PostgreSQL database."""
    with ExitStack() as stack:
        settings = {"WORKFLOW_SWEEP_INTERVAL": SWEEP}
        if ledger == "postgres":
            settings.update(server_on(stack.enter_context(fresh_database("wf_crash"))))
        yield settings


LEDGERS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


# -- the tests ----------------------------------------------------------------------------------------------------


def waiting_runs(client: httpx.Client, playbook: str) -> dict[str, str]:
    """Starts one run of each waiting kind, and answers them by name once each waits where the crash should
    find it: the timer run at its wait, the calls run at its child workflow (whose child waits on its timer),
    the listening run at its listen."""
    runs = {name: str(uuid.uuid4()) for name in ("timer", "calls", "listens")}
    for name, run_id in runs.items():
        assert start_run(client, playbook, name, {"n": 1}, run_id)["status"] == "started"
    wait_until_waiting(client, playbook, runs["timer"], "/do/1/pause")
    wait_until_waiting(client, playbook, runs["calls"], "/do/1/nested")
    wait_until_waiting(client, playbook, runs["listens"], "/do/1/hear")
    child = callee_ids(history(client, playbook, runs["calls"]))[1]
    wait_until_waiting(client, playbook, child, "/do/0/pause")
    return runs


def answer_and_finish(client: httpx.Client, playbook: str, runs: dict[str, str]) -> dict[str, dict[str, Any]]:
    event = {"event": {"type": "com.acme.go", "id": f"go-{runs['listens']}", "data": {"n": 7}}}
    sent = send(client, "POST", f"{playbook}/runs/{runs['listens']}/events", json=event)
    assert sent.status_code == 200, sent.text
    return wait_ended(client, playbook, list(runs.values()))


def start_short_runs_until_killed(server: ServerProcess, playbook: str, run_ids: list[str]) -> list[str]:
    """Starts the `short` runs from 8 threads and SIGKILLs the server once 60 starts were answered, while
    starts, calls and timers of the earlier ones are being applied; answers the run ids whose start answered."""
    answered: list[str] = []

    def starter(share: list[str]) -> None:
        with server.client() as client:
            for run_id in share:
                body = {"input": {"n": 1}, "run_id": run_id}
                while True:
                    try:
                        response = client.post(f"{playbook}/definitions/workflow/short/run", json=body)
                    except httpx.TransportError:
                        return
                    # A busy holder may answer `unavailable` for a moment (its sweep outlasted its fence):
                    # sent again, as Retry-After asks.
                    if response.status_code != 503:
                        break
                    time.sleep(0.1)
                assert response.status_code == 200, response.text
                answered.append(run_id)

    starters = [threading.Thread(target=starter, args=(run_ids[i::8],)) for i in range(8)]
    for thread in starters:
        thread.start()
    deadline = time.monotonic() + SETTLE_SECONDS
    while len(answered) < 60 and time.monotonic() < deadline and any(t.is_alive() for t in starters):
        time.sleep(0.01)
    kill(server)
    for thread in starters:
        thread.join()
    return answered


@pytest.mark.parametrize("ledger", LEDGERS)
@pytest.mark.slow(seconds=20)
def test_workflow_runs_finish_once_after_a_sigkill(tmp_path: Path, ledger: str) -> None:
    """(a) a timer, (b) calls with a child workflow waiting on its timer, (c) a listen, each waiting when the
    server is killed; (d) starts killed mid-way. After a restart on the same ledger every run ends once."""
    folder = tmp_path / "server"
    short_ids = [str(uuid.uuid4()) for _ in range(400)]
    with ledger_settings(ledger) as settings:
        server = start_server(folder, settings)
        try:
            with server.client() as client:
                playbook = new_playbook(client)
                save_workflows(client, playbook)
                crashed = waiting_runs(client, playbook)
        except BaseException:
            kill(server)
            raise
        answered = start_short_runs_until_killed(server, playbook, short_ids)
        assert 0 < len(answered) < len(short_ids), "the kill should land while runs are being started"

        again = start_server(folder, settings)
        try:
            with again.client() as client:
                ended = answer_and_finish(client, playbook, crashed)
                existing = [
                    run_id for run_id in short_ids if client.get(f"{playbook}/runs/{run_id}").status_code == 200
                ]
                assert set(answered) <= set(existing)
                ended.update(wait_ended(client, playbook, existing))
                # The same waiting runs without a crash, on the restarted server: the shapes to compare with.
                uninterrupted = waiting_runs(client, playbook)
                answer_and_finish(client, playbook, uninterrupted)

                for name, run_id in crashed.items():
                    assert ended[run_id]["status"] == "succeeded", ended[run_id]
                    events = history(client, playbook, run_id)
                    check_once(events)
                    check_callees_once(client, playbook, events)
                    for callee in callee_ids(events):
                        if client.get(f"{playbook}/runs/{callee}").json()["type"] == "workflow":
                            check_once(history(client, playbook, callee))
                    assert shape(events) == shape(history(client, playbook, uninterrupted[name])), name
                assert ended[crashed["timer"]]["output"] == {"n": 2}
                assert ended[crashed["calls"]]["output"] == {"n": 2}
                assert ended[crashed["listens"]]["output"] == {"heard": 7}

                statuses = Counter(ended[run_id]["status"] for run_id in existing)
                assert statuses == Counter({"succeeded": len(existing)}), statuses
                for run_id in existing:
                    events = history(client, playbook, run_id)
                    check_once(events)
                    assert ended[run_id]["output"] == {"n": 2}
                    for callee in callee_ids(events):
                        # A computation killed mid-run is run again under its id (seeds, "Retrying under a run
                        # id"): an interrupted attempt has no ending, and the last attempt ends once.
                        types = [event["type"] for event in history(client, playbook, callee)]
                        assert sum(types.count(ending) for ending in ENDINGS) == 1, types
                        assert types[-1] == "run_succeeded", types
        finally:
            kill(again)


def test_a_stopping_server_stops_its_workflow_runtime_within_the_graceful_budget(tmp_path: Path) -> None:
    """SIGTERM asks the workflow runtime to stop: it should end on its own (releasing the lease so a standby
    takes over at once, `TimerLoop.run`), not be cancelled by the supervisor once the budget ran out."""
    folder = tmp_path / "server"
    server = start_server(folder, {"WORKFLOW_SWEEP_INTERVAL": SWEEP})
    assert server.stop() == 0, server.log()
    assert "child workflows did not stop within" not in server.log()
