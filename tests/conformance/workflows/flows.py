"""Documents and small HTTP helpers shared by the workflow conformance tests.

Every test speaks to the real server over HTTP; nothing below the routes is imported. Each run is started
under a run id the test chooses, so the run is read with `get_run` however its start request answered.
"""

from __future__ import annotations

import json
import textwrap
import time
import uuid
from typing import Any

import httpx

POLL_LIMIT_S = 30.0
"""How long a test polls a run before it gives up: a limit, never a timed assertion."""

POLL_SLEEP_S = 0.05
STANDARD = "https://open-workflow-specification.org/spec/1.0.0/errors/"
PROBLEMS = "https://on.auto/problems/"
ENDED = ("succeeded", "rejected", "failed")


def workflow(body: str, name: str = "flow") -> str:
    """A document: the `document` header, then `body` (YAML, dedented)."""
    head = f"document: {{ dsl: '1.0.3', namespace: tests, name: {name}, version: '1.0.0' }}\n"
    return head + textwrap.dedent(body).lstrip("\n")


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def save(client: httpx.Client, playbook: str, name: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/workflow", json={"name": name, "source": source})


def saved(client: httpx.Client, playbook: str, name: str, source: str) -> dict[str, Any]:
    response = save(client, playbook, name, source)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def fresh_name(prefix: str = "flow") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def new_run_id() -> str:
    return str(uuid.uuid4())


def start(
    client: httpx.Client, playbook: str, name: str, value: object = None, run_id: str | None = None
) -> httpx.Response:
    """`run_definition` of the workflow `name`; pass `run_id` to choose the run's id."""
    body: dict[str, Any] = {"input": value}
    if run_id is not None:
        body["run_id"] = run_id
    return client.post(f"{playbook}/definitions/workflow/{name}/run", json=body)


def get_run(client: httpx.Client, playbook: str, run_id: str) -> dict[str, Any]:
    response = client.get(f"{playbook}/runs/{run_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def until(client: httpx.Client, playbook: str, run_id: str, done: Any, limit_s: float = POLL_LIMIT_S) -> dict[str, Any]:
    """Read the run until `done(run)` holds, within `POLL_LIMIT_S`; fail past the limit.

    A run a call starts is recorded after the caller's `step_waiting`: until then it is `not_found`."""
    limit = time.monotonic() + limit_s
    while True:
        response = client.get(f"{playbook}/runs/{run_id}")
        assert response.status_code in (200, 404), response.text
        run: dict[str, Any] = response.json() if response.status_code == 200 else {"status": None}
        if response.status_code == 200 and done(run):
            return run
        assert time.monotonic() < limit, f"the run did not get there within {limit_s} s: {run}"
        time.sleep(POLL_SLEEP_S)


def finished(client: httpx.Client, playbook: str, run_id: str, limit_s: float = POLL_LIMIT_S) -> dict[str, Any]:
    """The run once it is no longer `started`."""
    return until(client, playbook, run_id, lambda run: run["status"] != "started", limit_s)


def run_to_end(client: httpx.Client, playbook: str, name: str, value: object = None) -> dict[str, Any]:
    """Start a run under a fresh id and read it once it ended; the start answers 200 or the run's ending."""
    run_id = new_run_id()
    response = start(client, playbook, name, value, run_id)
    run = finished(client, playbook, run_id)
    if response.status_code == 200:
        assert response.json()["run_id"] == run_id
        assert response.json()["status"] in ("started", run["status"]), response.text
    else:
        assert run["status"] == "rejected", (response.text, run)
        assert response.json()["reason"] == run["rejection"]["reason"], (response.text, run)
    return run


def output_of(client: httpx.Client, playbook: str, name: str, value: object = None) -> Any:
    run = run_to_end(client, playbook, name, value)
    assert run["status"] == "succeeded", run
    return run["output"]


def rejection_of(client: httpx.Client, playbook: str, name: str, value: object = None) -> dict[str, Any]:
    run = run_to_end(client, playbook, name, value)
    assert run["status"] == "rejected", run
    rejection: dict[str, Any] = run["rejection"]
    return rejection


def history(client: httpx.Client, playbook: str, run_id: str) -> list[dict[str, Any]]:
    """Every event of the run's history, oldest first, over all its pages."""
    events: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 100}
    while True:
        response = client.get(f"{playbook}/runs/{run_id}/history", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        events.extend(page["events"])
        if not page.get("next_cursor"):
            return events
        params["cursor"] = page["next_cursor"]


def steps_of(events: list[dict[str, Any]]) -> list[tuple[str, str, int, str]]:
    """(type, reference, run, outcome words) of each step event, in order."""
    return [
        (event["type"], event["data"]["reference"], event["data"]["run"], event["data"].get("outcome", ""))
        for event in events
        if event["type"].startswith("step_")
    ]


def inputs_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == "workflow_input_applied"]


def send(client: httpx.Client, playbook: str, run_id: str, event: dict[str, Any]) -> httpx.Response:
    return client.post(f"{playbook}/runs/{run_id}/events", json={"event": event})


def waiting(client: httpx.Client, playbook: str, run_id: str, reference: str) -> dict[str, Any]:
    """Poll the history until a `step_waiting` of `reference` is recorded; that step event."""
    limit = time.monotonic() + POLL_LIMIT_S
    while True:
        for event in history(client, playbook, run_id):
            if event["type"] == "step_waiting" and event["data"]["reference"] == reference:
                return event
        assert time.monotonic() < limit, f"{reference} did not wait within {POLL_LIMIT_S} s"
        time.sleep(POLL_SLEEP_S)
