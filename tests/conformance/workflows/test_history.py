"""Spec workflow-format.md 14.1 and 12 (history, ids, causes, metadata), event by event through HTTP.

The example's `classify-expense` is a reasoning function; here it is a computation function that answers the
same `{"category": "travel"}`. Its `approve-expense` is an interaction function, which this server does not
build: the second waiting step is a `listen` answered by `send_run_event` with `{"approved": true}`. So I1
leaves classify waiting, I2 moves classify, route and ask-manager, I3 finishes ask-manager, as in the spec.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import create_computation, new_playbook, pointers, problem
from tests.conformance.workflows.flows import (
    finished,
    history,
    new_run_id,
    saved,
    send,
    start,
    waiting,
    workflow,
)

EXPENSE = workflow(
    """
do:
  - classify:
      call: run_definition
      with: { type: computation, name: classify-expense, input: { description: '${ data["description"] }' } }
      output: { as: '${ input | {"category": data["category"]} }' }
  - route:
      switch:
        - large: { when: 'data["amount_cents"] >= 50000', then: ask-manager }
        - small: { then: auto-approve }
  - auto-approve:
      set: { claim_id: '${ data["claim_id"] }', category: '${ data["category"] }', approved: true, by: policy }
      then: end
  - ask-manager:
      listen: { to: { one: { with: { type: com.acme.expense.decided } } } }
      output:
        as: >-
          ${ {"claim_id": input["claim_id"], "category": input["category"], "approved": data[0]["approved"],
          "by": "manager"} }
""",
    name="expense-approval",
)

CLASSIFY = """---
language: python
---
def main(input):
    return {"category": "travel" if "Flights" in input["description"] else "other"}
"""

CLAIM = {"claim_id": "C-7731", "amount_cents": 82000, "description": "Flights to Lisbon"}


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    playbook_url = new_playbook(client)
    create_computation(client, playbook_url, "classify-expense", CLASSIFY)
    saved(client, playbook_url, "expense-approval", EXPENSE)
    return playbook_url


def by_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def cause(event: dict[str, Any]) -> Any:
    return event["metadata"]["causation_id"]


def test_expense_approval_asks_the_manager_event_by_event(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    started = start(client, playbook, "expense-approval", CLAIM, run_id)
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "started"
    waiting(client, playbook, run_id, "/do/3/ask-manager")
    decided = send(client, playbook, run_id, {"type": "com.acme.expense.decided", "data": {"approved": True}})
    assert decided.status_code == 200, decided.text
    event_id = decided.json()["event"]["id"]
    run = finished(client, playbook, run_id)
    output = {"approved": True, "by": "manager", "category": "travel", "claim_id": "C-7731"}
    assert run["status"] == "succeeded", run
    assert json.dumps(run["output"], separators=(",", ":")) == json.dumps(output, separators=(",", ":"))
    assert run["record"] == {}

    events = history(client, playbook, run_id)
    i1, i2, i3 = by_type(events, "workflow_input_applied")
    assert [event["type"] for event in events] == [
        "run_started",
        "workflow_input_applied",
        "step_waiting",
        "run_deferred",
        "workflow_input_applied",
        "step_finished",
        "step_finished",
        "step_waiting",
        "workflow_input_applied",
        "step_finished",
        "run_succeeded",
    ]
    run_started = events[0]
    callee = events[2]["data"]["run_id"]

    # Ids, causes and the inputs' data.
    assert cause(run_started) is None
    assert cause(i1) == run_started["id"]
    assert i1["data"] == {
        "run_id": run_id,
        "input": {"kind": "started", "key": run_id},
        "step_count": 1,
        "steps": [{"task": "/do/0/classify", "run": 1, "outcome": "waiting"}],
        "output_kinds": ["arm_timer", "start_call"],
    }
    assert events[2]["id"] == f"{i1['id']}_1" and cause(events[2]) == i1["id"]
    assert events[2]["data"] == {
        "name": "classify",
        "reference": "/do/0/classify",
        "run": 1,
        "times": 1,
        "waits_for": "call",
        "run_id": callee,
    }
    assert cause(i2) == i1["id"]
    key = json.dumps([run_id, "/do/0/classify", 1], separators=(",", ":"))
    assert i2["data"] == {
        "run_id": run_id,
        "input": {"kind": "call_answered", "key": key, "status": "succeeded"},
        "step_count": 3,
        "steps": [
            {"task": "/do/0/classify", "run": 1, "outcome": "completed"},
            {"task": "/do/1/route", "run": 1, "outcome": "completed"},
            {"task": "/do/3/ask-manager", "run": 1, "outcome": "waiting"},
        ],
        "output_kinds": ["cancel_timer", "arm_listener"],
    }
    classify, route, ask = events[5:8]
    assert [event["id"] for event in (classify, route, ask)] == [f"{i2['id']}_{n}" for n in (1, 2, 3)]
    assert [cause(event) for event in (classify, route, ask)] == [i2["id"], classify["id"], route["id"]]
    assert route["data"] == {"name": "route", "reference": "/do/1/route", "run": 1, "times": 1}
    assert ask["data"] == {
        "name": "ask-manager",
        "reference": "/do/3/ask-manager",
        "run": 1,
        "times": 1,
        "waits_for": "event",
    }
    assert cause(i3) == i2["id"]
    assert i3["data"]["input"] == {"kind": "event_received", "key": event_id, "event_type": "com.acme.expense.decided"}
    assert i3["data"]["step_count"] == 1
    assert i3["data"]["steps"] == [{"task": "/do/3/ask-manager", "run": 1, "outcome": "completed"}]
    assert i3["data"]["output_kinds"][-1] == "settle"
    assert "cancel_listener" in i3["data"]["output_kinds"]
    assert events[9]["id"] == f"{i3['id']}_1" and cause(events[9]) == i3["id"]
    assert cause(events[10]) == i3["id"]
    assert cause(events[3]) is not None

    # Fields: these and no others, a sentence each; metadata names the run and the tree's top run.
    for event in events:
        assert set(event) == {"id", "type", "summary", "data", "metadata"}
        assert event["summary"].endswith("."), event["summary"]
        assert event["metadata"]["run_id"] == run_id
        assert event["metadata"]["correlation_id"] == run_id
        assert event["metadata"]["definition"]["type"] == "workflow"
        assert "called_by" not in event["metadata"] and "call_depth" not in event["metadata"]

    # The callee: caused by the step that waited for it, in the tree of the top run.
    callee_events = history(client, playbook, callee)
    assert [event["type"] for event in callee_events] == ["run_started", "run_succeeded"]
    for event in callee_events:
        assert event["metadata"]["correlation_id"] == run_id
        assert event["metadata"]["called_by"] == {"run_id": run_id, "reference": "/do/0/classify", "run": 1}
        assert event["metadata"]["call_depth"] == 1
    assert cause(callee_events[0]) == events[2]["id"]
    tree = client.get(f"{playbook}/events", params={"run_id": run_id, "limit": 100}).json()["events"]
    assert {event["id"] for event in callee_events} <= {event["id"] for event in tree}

    # Step ids read back unchanged with get_event; _0, _02 are refused, one past the last is not found.
    read = client.get(f"{playbook}/events/{ask['id']}")
    assert read.status_code == 200, read.text
    assert (read.json()["id"], read.json()["type"], read.json()["data"]) == (ask["id"], ask["type"], ask["data"])
    problem(client.get(f"{playbook}/events/{i2['id']}_4"), 404, "not_found")
    for bad in (f"{i2['id']}_0", f"{i2['id']}_02"):
        assert pointers(problem(client.get(f"{playbook}/events/{bad}"), 422, "invalid_input")) == ["/event_id"]


def test_a_small_claim_ends_by_policy_in_the_second_input(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "expense-approval", CLAIM | {"amount_cents": 1200}, run_id)
    run = finished(client, playbook, run_id)
    assert run["output"] == {"approved": True, "by": "policy", "category": "travel", "claim_id": "C-7731"}
    events = history(client, playbook, run_id)
    assert [event["type"] for event in events] == [
        "run_started",
        "workflow_input_applied",
        "step_waiting",
        "run_deferred",
        "workflow_input_applied",
        "step_finished",
        "step_finished",
        "step_finished",
        "run_succeeded",
    ]
    i2 = events[4]
    assert [step["task"] for step in i2["data"]["steps"]] == ["/do/0/classify", "/do/1/route", "/do/2/auto-approve"]
    assert i2["data"]["output_kinds"] == ["cancel_timer", "settle"]
    assert cause(events[7]) == events[6]["id"]
    assert cause(events[8]) == i2["id"]
