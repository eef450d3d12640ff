"""A workflow waiting on a person survives a SIGKILL of the server (issue 18): after a restart on the same ledger
it takes the answer given then, ends with the workflow error of an expiry that a later server carries out from the
stored schedule alone (its clock, a test's, moved past `expires_at` rather than waiting the minute out), and ends
cancelled when its request is cancelled after the restart.

The request, its expiry and the workflow's wait are all in the ledger (the run's facts, the `open_requests`
projection and the due-work table), so nothing is lost with the process; the restarted server waits for the
dead holder's lease to lapse before it ends runs, and answers `unavailable` with `Retry-After` to workflow
starts meanwhile.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import new_playbook
from tests.e2e.moved_clock import TEST_CLOCK_SETTINGS, past
from tests.e2e.server_process import start_server
from tests.e2e.test_workflow_crashes import LEDGERS, kill, ledger_settings, send

SETTLE_SECONDS = 120.0
"""The bound of every poll: generous, never a timing claim."""
QUESTION = """---
to: '{{ input.lead }}'
expires: PT1M
input:
  schema: { type: object, required: [lead], properties: { lead: { type: string } } }
output:
  schema: { type: object, required: [decision], properties: { decision: { type: string, enum: [go, hold] } } }
---
May it go out?
"""
ASKING = """document: { dsl: '1.0.3', namespace: crash, name: asking, version: '1.0.0' }
do:
  - ask:
      call: run_definition
      with: { type: interaction, name: deploy, input: { lead: '${ data["lead"] }' } }
  - after: { set: '${ {"decision": data["decision"]} }' }
"""


def save(client: httpx.Client, playbook: str) -> None:
    saved = client.post(f"{playbook}/definitions/interaction", json={"name": "deploy", "source": QUESTION})
    assert saved.status_code == 201, saved.text
    flow = client.post(f"{playbook}/definitions/workflow", json={"name": "asking", "source": ASKING})
    assert flow.status_code == 201, flow.text


def asked(client: httpx.Client, playbook: str, lead: str) -> tuple[str, str]:
    """Starts the workflow; answers its run id and its request's once the request is listed."""
    flow = str(uuid.uuid4())
    body = {"input": {"lead": lead}, "run_id": flow}
    started = send(client, "POST", f"{playbook}/definitions/workflow/asking/run", json=body)
    assert started.status_code == 200, started.text
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        listed = client.get(f"{playbook}/interactions", params={"to": lead}).json()["interactions"]
        if listed:
            return flow, str(listed[0]["run_id"])
        assert time.monotonic() < deadline, "the workflow asked nothing"
        time.sleep(0.05)


def ended(client: httpx.Client, playbook: str, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        run: dict[str, Any] = client.get(f"{playbook}/runs/{run_id}").json()
        if run["status"] != "started":
            return run
        assert time.monotonic() < deadline, f"the run {run_id} did not end: {run}"
        time.sleep(0.1)


@pytest.mark.parametrize("ledger", LEDGERS)
@pytest.mark.slow(seconds=10)
def test_a_waiting_workflow_takes_its_answer_expiry_and_cancel_after_a_sigkill(tmp_path: Path, ledger: str) -> None:
    folder = tmp_path / "server"
    with ledger_settings(ledger) as settings:
        server = start_server(folder, settings)
        try:
            with server.client() as client:
                playbook = new_playbook(client)
                save(client, playbook)
                answered_flow, answered_request = asked(client, playbook, "ana")
                expiring_flow, expiring_request = asked(client, playbook, "bo")
                cancelled_flow, cancelled_request = asked(client, playbook, "cy")
                expires_at = next(
                    item["expires_at"]
                    for item in client.get(f"{playbook}/interactions").json()["interactions"]
                    if item["run_id"] == expiring_request
                )
        finally:
            kill(server)

        again = start_server(folder, settings)
        try:
            with again.client() as client:
                listed = {item["run_id"] for item in client.get(f"{playbook}/interactions").json()["interactions"]}
                assert {answered_request, expiring_request, cancelled_request} <= listed
                reply = client.post(f"{playbook}/runs/{answered_request}/answer", json={"answer": {"decision": "go"}})
                assert reply.status_code == 200, reply.text
                run = ended(client, playbook, answered_flow)
                assert run["status"] == "succeeded" and run["output"] == {"decision": "go"}, run

                cancel = send(client, "POST", f"{playbook}/runs/{cancelled_request}/cancel", json={})
                assert cancel.status_code == 200, cancel.text
                request = ended(client, playbook, cancelled_request)
                assert request["rejection"]["reason"] == "cancelled" and request["rejection"]["kind"] == "requested"
                run = ended(client, playbook, cancelled_flow)
                assert run["status"] == "rejected", run
                assert "rejected the run with cancelled" in run["rejection"]["detail"], run
        finally:
            kill(again)

        # Past the expiry while no server ran: the next server, its clock moved past `expires_at` (a test's clock,
        # instead of waiting out the minute), expires the request at its first sweeps from then on.
        third = start_server(folder, {**settings, **TEST_CLOCK_SETTINGS})
        try:
            with third.client() as client:
                past(client, expires_at)
                request = ended(client, playbook, expiring_request)
                assert request["rejection"]["reason"] == "unanswered" and request["rejection"]["kind"] == "expired"
                run = ended(client, playbook, expiring_flow)
                assert run["status"] == "rejected", run
                assert run["rejection"]["reason"] == "unanswered" and run["rejection"]["kind"] == "expired"
                retried = client.post(
                    f"{playbook}/definitions/interaction/deploy/run",
                    json={"input": {"lead": "bo"}, "run_id": expiring_request},
                )
                assert retried.status_code == 410, retried.text
                assert retried.json()["type"] == "https://on.auto/problems/unanswered"
                assert client.get(f"{playbook}/interactions").json()["interactions"] == []
            assert third.stop() == 0, third.log()
        except BaseException:
            kill(third)
            raise
