"""Spec, recall-format.md: "In a workflow": a `call: run_definition` task with `type: recall` hands on the run's
output (never its checkpoint); a stalled view surfaces as a `runtime` error, status 409, carrying its kind; a view
still being built raises the problem type `https://on.auto/problems/rebuilding`, status 503."""

from __future__ import annotations

import httpx

from tests.conformance.helpers import fresh_id
from tests.conformance.recall.documents import caught_up, counting, publish, recall, saved, standing_until
from tests.conformance.workflows.flows import output_of as workflow_output
from tests.conformance.workflows.flows import save as save_workflow
from tests.conformance.workflows.flows import workflow

CALLS_RECALL = workflow("""
do:
  - guard:
      try:
        - recalled:
            call: run_definition
            with: { type: recall, name: '${ data["name"] }', input: {} }
      catch:
        as: failure
        do:
          - show: { set: '${ {"failed": failure} }' }
""")


def calling(client: httpx.Client, playbook: str) -> str:
    name = fresh_id("calls-recall")
    response = save_workflow(client, playbook, name, CALLS_RECALL)
    assert response.status_code == 201, response.text
    return name


def test_a_workflow_step_hands_on_the_view(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.flow")
    name = fresh_id("flow-view")
    saved(client, playbook, name, counting(kind))
    published = publish(client, playbook, kind, None)
    caught_up(client, playbook, name, 1)
    flow = calling(client, playbook)
    assert workflow_output(client, playbook, flow, {"name": name}) == {"count": 1, "ids": [published["id"]]}


def test_a_stalled_view_is_a_runtime_error_with_its_kind(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.flow-stall")
    name = fresh_id("flow-stall")
    module = "def fold(view, event):\n    raise ValueError('no')\n"
    saved(client, playbook, name, recall(f"source:\n  events:\n    - type: {kind}\n", module))
    publish(client, playbook, kind, None)
    standing_until(client, playbook, name, lambda standing: standing["state"] == "stalled")
    flow = calling(client, playbook)
    failure = workflow_output(client, playbook, flow, {"name": name})["failed"]
    assert failure["status"] == 409
    assert failure["type"] == "https://open-workflow-specification.org/spec/1.0.0/errors/runtime"
    assert failure.get("kind") == "stalled"


def test_a_view_being_built_raises_the_rebuilding_problem(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.flow-slow")
    for index in range(40):
        publish(client, playbook, kind, {"n": index})
    name = fresh_id("flow-slow")
    module = "def fold(view, event):\n    for _ in range(150000):\n        pass\n    return view\n"
    flow = calling(client, playbook)
    saved(client, playbook, name, recall(f"source:\n  events:\n    - type: {kind}\n", module))
    failure = workflow_output(client, playbook, flow, {"name": name})["failed"]
    assert failure["type"] == "https://on.auto/problems/rebuilding"
    assert failure["status"] == 503
