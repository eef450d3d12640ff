"""One UUID names one run, however its hex digits are cased (seeds, "Retrying under a run id": the runtime keeps
one run under each id). Every place a run id enters compares it in its canonical lower-case form, and every
answer gives that form."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.conformance.helpers import ECHO_PROGRAM, create_computation, new_playbook, problem
from tests.conformance.workflows.flows import finished, saved, waiting, workflow

LISTENER = workflow("""
do:
  - hold:
      listen:
        to:
          one: { with: { type: com.example.go } }
  - after: { set: '${ {"got": data} }' }
""")


@pytest.fixture(scope="module")
def playbook_url(client: httpx.Client) -> str:
    url = new_playbook(client)
    create_computation(client, url, "echo", ECHO_PROGRAM)
    return url


def run_echo(client: httpx.Client, playbook_url: str, run_id: str, value: object) -> httpx.Response:
    return client.post(f"{playbook_url}/definitions/computation/echo/run", json={"input": value, "run_id": run_id})


def test_an_upper_case_run_id_is_the_same_run_as_its_lower_case_form(client: httpx.Client, playbook_url: str) -> None:
    run_id = str(uuid.uuid4())
    first = run_echo(client, playbook_url, run_id.upper(), {"n": 1})
    assert first.status_code == 200, first.text
    assert first.json()["run_id"] == run_id
    again = run_echo(client, playbook_url, run_id, {"n": 1})
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    mixed = run_id[:9].upper() + run_id[9:]
    other_input = run_echo(client, playbook_url, mixed, {"n": 2})
    body = problem(other_input, 409, "conflict")
    assert body["detail"] == (
        f"The run id {run_id} is already used for another definition or another input; use a new run id."
    )
    listed = client.get(f"{playbook_url}/runs", params={"limit": 100}).json()["runs"]
    assert [run["run_id"] for run in listed].count(run_id) == 1


def test_the_reads_and_cancel_take_either_case(client: httpx.Client, playbook_url: str) -> None:
    run_id = str(uuid.uuid4())
    assert run_echo(client, playbook_url, run_id, {"n": 3}).status_code == 200
    upper = run_id.upper()
    read = client.get(f"{playbook_url}/runs/{upper}")
    assert read.status_code == 200, read.text
    assert read.json()["run_id"] == run_id and read.json()["output"] == {"n": 3}
    lower_history = client.get(f"{playbook_url}/runs/{run_id}/history").json()
    upper_history = client.get(f"{playbook_url}/runs/{upper}/history")
    assert upper_history.status_code == 200, upper_history.text
    assert upper_history.json() == lower_history
    assert [event["type"] for event in lower_history["events"]] == ["run_started", "run_succeeded"]
    tree = client.get(f"{playbook_url}/events", params={"run_id": upper, "order": "asc"})
    assert tree.status_code == 200, tree.text
    assert [event["id"] for event in tree.json()["events"]] == [event["id"] for event in lower_history["events"]]
    cancelled = client.post(f"{playbook_url}/runs/{upper}/cancel", json={})
    body = problem(cancelled, 409, "conflict")
    assert body["detail"] == f"The run {run_id} has ended (succeeded), so there is nothing to cancel."


def test_an_unknown_run_id_in_upper_case_is_not_found(client: httpx.Client, playbook_url: str) -> None:
    run_id = str(uuid.uuid4())
    body = problem(client.get(f"{playbook_url}/runs/{run_id.upper()}"), 404, "not_found")
    assert body["detail"].endswith(f"has no run {run_id}.")


def test_a_workflow_run_takes_its_event_and_its_cancel_under_either_case(client: httpx.Client) -> None:
    url = new_playbook(client)
    name = "listener"
    saved(client, url, name, LISTENER)
    run_id = str(uuid.uuid4())
    started = client.post(f"{url}/definitions/workflow/{name}/run", json={"input": {}, "run_id": run_id.upper()})
    assert started.status_code == 200, started.text
    assert started.json()["run_id"] == run_id
    again = client.post(f"{url}/definitions/workflow/{name}/run", json={"input": {}, "run_id": run_id})
    assert again.status_code == 200, again.text
    assert again.json()["run_id"] == run_id and again.json()["status"] == "started"
    waiting(client, url, run_id, "/do/0/hold")
    sent = client.post(f"{url}/runs/{run_id.upper()}/events", json={"event": {"type": "com.example.go", "data": 5}})
    assert sent.status_code == 200, sent.text
    assert sent.json()["run_id"] == run_id
    run = finished(client, url, run_id)
    assert run["status"] == "succeeded" and run["output"] == {"got": [5]}, run

    second = str(uuid.uuid4())
    assert (
        client.post(f"{url}/definitions/workflow/{name}/run", json={"input": {}, "run_id": second}).status_code == 200
    )
    waiting(client, url, second, "/do/0/hold")
    cancel = client.post(f"{url}/runs/{second.upper()}/cancel", json={"reason": "not needed"})
    assert cancel.status_code == 200, cancel.text
    assert cancel.json()["run_id"] == second
    assert finished(client, url, second)["status"] == "rejected"
