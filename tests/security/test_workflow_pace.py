"""A workflow that loops on a zero wait (issue 37, item 1), end to end on a real server over each ledger.

`do: [ a: { wait: PT0S, then: a } ]` takes inputs as fast as the server applies them. It used to make every
`cancel_run` answer `503` (the request stated the run's stream version, which the loop moved first every time)
and to grow the ledger by megabytes a second for as long as `WORKFLOW_MAX_DURATION`. Now:

- a cancel is always taken: recorded between two of the run's inputs, answered `200`, and taken by the run
  before any other input, so nothing moves between `run_cancel_requested` and the cancel's input;
- a run that wakes itself 1,000 times in a row (a timer of less than a second, a yield) without waiting for
  anything outside itself ends `unavailable` with the workflow page's words (workflow-format.md 13), so what it
  records is bounded;
- one org's looping runs take their turn with the others: another org's run finishes while they loop.

Every check is on order and state, never on time: the polls have generous limits only so a broken server
cannot hang the suite.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from auto_runtime.functions.workflow.engine.decider import INPUTS_WITHOUT_WAITING
from tests.conformance.helpers import new_playbook
from tests.conformance.workflows.flows import (
    finished,
    get_run,
    history,
    inputs_of,
    new_run_id,
    saved,
    start,
    workflow,
)
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on

LOOP = workflow("do:\n  - a: { wait: PT0S, then: a }\n", name="spin")
SIMPLE = workflow("do:\n  - pause: { wait: PT0.1S }\n  - done: { set: { done: true } }\n", name="simple")
WOKE_ITSELF = (
    "The workflow woke itself 1000 times in a row without waiting for anything outside itself; "
    "it would never end (at /do/0/a)"
)
LIMIT_S = 300.0
"""How long a poll waits for a state before the test fails (a liveness bound, never a timed assertion)."""
LOOPING_RUNS = 4


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp(f"workflow-pace-{request.param}"))
    with ExitStack() as stack:
        if request.param == "postgres":
            settings = server_on(stack.enter_context(fresh_database("workflow_pace")))
        else:
            settings = {"LEDGER_FILE": str(folder / "data" / "ledger.db")}
        process = start_server(folder, settings)
        yield process
        assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def started_loop(client: httpx.Client, playbook: str) -> str:
    """Start a run of `LOOP` and return its id once it has moved a good many times (a full first page of
    history: more than 30 inputs)."""
    run_id = new_run_id()
    response = start(client, playbook, "spin", None, run_id)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "started"
    limit = time.monotonic() + LIMIT_S
    while True:
        page = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100})
        assert page.status_code == 200, page.text
        if page.json().get("next_cursor"):
            return run_id
        assert time.monotonic() < limit, "the looping run did not move"
        time.sleep(0.01)


def cancel(client: httpx.Client, playbook: str, run_id: str) -> dict[str, Any]:
    response = client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "Stop looping."})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_run_looping_on_a_zero_wait_is_cancelled_before_its_next_step(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    saved(client, playbook, "spin", LOOP)
    run_id = started_loop(client, playbook)

    answer = cancel(client, playbook, run_id)
    assert answer["run_id"] == run_id and answer["status"] in ("started", "rejected"), answer
    run = finished(client, playbook, run_id, LIMIT_S)
    assert run["status"] == "rejected"
    assert run["rejection"] == {"reason": "cancelled", "kind": "requested", "detail": "Stop looping."}

    events = history(client, playbook, run_id)
    types = [event["type"] for event in events]
    asked = types.index("run_cancel_requested")
    assert types[asked:] == ["run_cancel_requested", "workflow_input_applied", "run_rejected"], types[asked - 3 :]
    taken = events[asked + 1]
    assert taken["data"]["input"]["kind"] == "cancel_requested" and taken["data"]["step_count"] == 0
    assert taken["metadata"]["causation_id"] == events[asked]["id"]
    assert len(inputs_of(events)) <= INPUTS_WITHOUT_WAITING + 2


@pytest.mark.slow(seconds=15)
def test_a_run_that_wakes_itself_without_end_is_ended_with_the_pages_words(
    request: pytest.FixtureRequest, client: httpx.Client
) -> None:
    """The bound is the engine's, whichever ledger keeps the run; it is reached on SQLite only, since reaching it
    applies 1,001 inputs one after the other (minutes on a loaded PostgreSQL, where the cancel and the fair turns
    above are checked)."""
    if request.node.callspec.params["server"] == "postgres":
        pytest.skip("the bound is the engine's: reached once, on the SQLite ledger")
    playbook = new_playbook(client)
    saved(client, playbook, "spin", LOOP)
    run_id = new_run_id()
    assert start(client, playbook, "spin", None, run_id).status_code == 200

    run = finished(client, playbook, run_id, LIMIT_S)
    assert run["status"] == "rejected"
    assert run["rejection"] == {"reason": "unavailable", "detail": WOKE_ITSELF}

    events = history(client, playbook, run_id)
    inputs = inputs_of(events)
    # The start, the 1,000 inputs in which it woke itself, and the one past the bound that ended it, with no step.
    assert len(inputs) == 1 + INPUTS_WITHOUT_WAITING + 1
    assert inputs[-1]["data"]["input"]["kind"] == "timer_fired" and inputs[-1]["data"]["step_count"] == 0
    # Each input of the loop records itself and two steps (the wait finished, the next one waiting): what the run
    # recorded is bounded by the bound, whatever the pace.
    assert len(events) == 3 * INPUTS_WITHOUT_WAITING + 6
    assert [event["type"] for event in events[-2:]] == ["workflow_input_applied", "run_rejected"]
    again = client.post(f"{playbook}/runs/{run_id}/cancel", json={})
    assert again.status_code == 409, again.text


def test_another_orgs_run_finishes_while_one_orgs_runs_loop(client: httpx.Client) -> None:
    busy = new_playbook(client, org="org-loops")
    other = new_playbook(client, org="org-simple")
    saved(client, busy, "spin", LOOP)
    saved(client, other, "simple", SIMPLE)
    looping = [started_loop(client, busy) for _ in range(LOOPING_RUNS)]

    run_id = new_run_id()
    assert start(client, other, "simple", None, run_id).status_code == 200
    run = finished(client, other, run_id, LIMIT_S)
    assert run["status"] == "succeeded" and run["output"] == {"done": True}

    # Only now are the looping runs cancelled: had the simple run waited behind them, they would have reached
    # their bound (and ended `unavailable`) first.
    for looping_id in looping:
        cancel(client, busy, looping_id)
    endings = [finished(client, busy, looping_id, LIMIT_S) for looping_id in looping]
    assert [ending["rejection"]["reason"] for ending in endings] == ["cancelled"] * LOOPING_RUNS, endings
    succeeded = history(client, other, run_id)[-1]
    assert succeeded["type"] == "run_succeeded"
    for looping_id in looping:
        ending = history(client, busy, looping_id)[-1]
        assert ending["metadata"]["global_position"] > succeeded["metadata"]["global_position"]
    assert get_run(client, other, run_id)["status"] == "succeeded"
