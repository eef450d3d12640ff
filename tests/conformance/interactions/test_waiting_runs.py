"""A workflow that asks a person waits on the request durably (interaction-format §10, workflow-format §6)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from tests.conformance.helpers import new_playbook
from tests.conformance.interactions.documents import POLL_LIMIT_S, QUESTION, answer, defined, ended, history_types
from tests.conformance.workflows.flows import saved, workflow
from tests.e2e.moved_clock import past

ASKING = workflow("""
do:
  - ask:
      call: run_definition
      with: { type: interaction, name: deploy, input: { lead: '${ data["lead"] }', service: billing } }
  - after: { set: '${ {"decision": data["decision"], "asked": True} }' }
""")

CATCHING = workflow("""
do:
  - guarded:
      try:
        - ask:
            call: run_definition
            with: { type: interaction, name: deploy, input: { lead: ana, service: billing } }
      catch:
        errors: { with: { status: 409 } }
        as: failure
        do:
          - note: { set: '${ {"caught": failure["type"], "kind": failure.get("kind")} }' }
""")


def callee_of(client: httpx.Client, playbook: str, workflow_run: str) -> str:
    """The run id of the request the workflow started, once it is listed."""
    deadline = time.monotonic() + POLL_LIMIT_S
    while True:
        listed = client.get(f"{playbook}/interactions").json()["interactions"]
        if listed:
            run_id: str = listed[0]["run_id"]
            return run_id
        assert time.monotonic() < deadline, f"the workflow {workflow_run} asked nothing"
        time.sleep(0.05)


def start_flow(client: httpx.Client, playbook: str, name: str, value: Any) -> str:
    run_id = str(uuid.uuid4())
    response = client.post(f"{playbook}/definitions/workflow/{name}/run", json={"input": value, "run_id": run_id})
    assert response.status_code == 200, response.text
    return run_id


def test_a_workflow_waits_for_the_answer_and_takes_it(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    saved(client, playbook, "asking", ASKING)
    flow = start_flow(client, playbook, "asking", {"lead": "ana"})
    request = callee_of(client, playbook, flow)
    assert client.get(f"{playbook}/runs/{flow}").json()["status"] == "started"
    assert answer(client, playbook, request, {"decision": "go"}).status_code == 200
    run = ended(client, playbook, flow)
    assert run["status"] == "succeeded", run
    assert run["output"] == {"decision": "go", "asked": True}
    assert ended(client, playbook, request)["output"] == {"decision": "go"}


def test_a_cancelled_request_raises_cancelled_in_the_workflow(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    saved(client, playbook, "catching", CATCHING)
    flow = start_flow(client, playbook, "catching", {})
    request = callee_of(client, playbook, flow)
    assert client.post(f"{playbook}/runs/{request}/cancel", json={}).status_code == 200
    run = ended(client, playbook, flow)
    assert run["status"] == "succeeded", run
    assert run["output"] == {"caught": "https://on.auto/problems/cancelled", "kind": "requested"}


def test_a_cancelled_request_the_workflow_does_not_catch_rejects_it_invalid_input(client: httpx.Client) -> None:
    """workflow-format §8 and the seeds: an uncaught child cancellation (409) rejects the workflow
    `invalid_input`, not `cancelled`, since the workflow itself was not cancelled."""
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    saved(client, playbook, "asking", ASKING)
    flow = start_flow(client, playbook, "asking", {"lead": "ana"})
    request = callee_of(client, playbook, flow)
    assert client.post(f"{playbook}/runs/{request}/cancel", json={}).status_code == 200
    run = ended(client, playbook, flow)
    assert run["status"] == "rejected", run
    assert run["rejection"]["reason"] == "invalid_input" and "kind" not in run["rejection"], run


def test_cancelling_the_workflow_cancels_the_request_parent_ended(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    saved(client, playbook, "asking", ASKING)
    flow = start_flow(client, playbook, "asking", {"lead": "ana"})
    request = callee_of(client, playbook, flow)
    assert client.post(f"{playbook}/runs/{flow}/cancel", json={}).status_code == 200
    assert ended(client, playbook, flow)["rejection"]["reason"] == "cancelled"
    callee = ended(client, playbook, request)
    assert callee["status"] == "rejected"
    assert callee["rejection"]["reason"] == "cancelled" and callee["rejection"]["kind"] == "parent_ended"
    assert history_types(client, playbook, request)[-2:] == ["run_cancel_requested", "run_rejected"]
    assert client.get(f"{playbook}/interactions").json()["interactions"] == []


CATCHING_UNANSWERED = workflow("""
do:
  - guarded:
      try:
        - ask:
            call: run_definition
            with: { type: interaction, name: soon, input: { lead: ana, service: billing } }
      catch:
        errors: { with: { status: 410 } }
        as: failure
        do:
          - note: { set: '${ {"caught": failure["type"], "kind": failure.get("kind")} }' }
""")


def test_an_expired_request_raises_unanswered_which_a_catch_of_410_takes(client: httpx.Client) -> None:
    """The shortest `expires` is a minute: the server's clock (a test's) is moved past the request's `expires_at`
    instead of waiting the minute out."""
    playbook = new_playbook(client)
    defined(client, playbook, "soon", QUESTION.replace("expires: PT1H", "expires: PT1M"))
    saved(client, playbook, "catching", CATCHING_UNANSWERED)
    flow = start_flow(client, playbook, "catching", {})
    request = callee_of(client, playbook, flow)
    listed = client.get(f"{playbook}/interactions").json()["interactions"]
    past(client, next(item["expires_at"] for item in listed if item["run_id"] == request))
    expired = ended(client, playbook, request)
    assert expired["rejection"]["reason"] == "unanswered" and expired["rejection"]["kind"] == "expired"
    assert expired["rejection"]["detail"].startswith("Nobody answered the request before it expired")
    run = ended(client, playbook, flow)
    assert run["status"] == "succeeded", run
    assert run["output"] == {"caught": "https://on.auto/problems/unanswered", "kind": "expired"}
    retried = client.post(
        f"{playbook}/definitions/interaction/soon/run",
        json={"input": {"lead": "ana", "service": "billing"}, "run_id": request},
    )
    assert retried.status_code == 410, retried.text
    assert retried.json()["type"] == "https://on.auto/problems/unanswered" and retried.json()["kind"] == "expired"
    assert history_types(client, playbook, request)[-1] == "run_rejected"
