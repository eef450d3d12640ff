"""Interaction documents and HTTP helpers the interaction conformance tests share."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

POLL_LIMIT_S = 30.0
"""How long a test waits for a run to move: a limit, never a timed assertion."""

QUESTION = """---
description: Ask the lead whether a deploy may go out
to: '{{ input.lead }}'
expires: PT1H
input:
  schema:
    type: object
    required: [lead, service]
    properties:
      lead: { type: string }
      service: { type: string }
output:
  schema:
    type: object
    required: [decision]
    properties:
      decision: { type: string, enum: [go, hold] }
      reason: { type: string, maxLength: 100 }
---
May **{{ input.service }}** go out tonight? Reply go or hold.
"""

NOTIFICATION = """---
to: '{{ input.lead }}'
expires: PT1H
---
{{ input.service }} went out.
"""


def define(client: httpx.Client, playbook: str, name: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/interaction", json={"name": name, "source": source})


def defined(client: httpx.Client, playbook: str, name: str, source: str) -> dict[str, Any]:
    response = define(client, playbook, name, source)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def ask(client: httpx.Client, playbook: str, name: str, value: Any, run_id: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {"input": value, "run_id": run_id or str(uuid.uuid4())}
    return client.post(f"{playbook}/definitions/interaction/{name}/run", json=body)


def answer(client: httpx.Client, playbook: str, run_id: str, value: Any, **extra: Any) -> httpx.Response:
    return client.post(f"{playbook}/runs/{run_id}/answer", json={"answer": value, **extra})


def run_of(client: httpx.Client, playbook: str, run_id: str) -> dict[str, Any]:
    response = client.get(f"{playbook}/runs/{run_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def ended(client: httpx.Client, playbook: str, run_id: str, limit: float = POLL_LIMIT_S) -> dict[str, Any]:
    """The run once it ended; fails when it has not within `limit` seconds."""
    deadline = time.monotonic() + limit
    while True:
        run = run_of(client, playbook, run_id)
        if run["status"] != "started":
            return run
        assert time.monotonic() < deadline, f"the run {run_id} did not end: {run}"
        time.sleep(0.05)


def history_types(client: httpx.Client, playbook: str, run_id: str) -> list[str]:
    response = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100})
    assert response.status_code == 200, response.text
    return [event["type"] for event in response.json()["events"]]


def open_requests(client: httpx.Client, playbook: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"{playbook}/interactions", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
