"""Small helpers the conformance tests share: fresh playbooks and problem checks over real HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

ADD_PROGRAM = """---
description: Adds two numbers
language: python
input:
  schema:
    type: object
    required: [a, b]
    properties:
      a: { type: integer, description: The first number, examples: [2] }
      b: { type: integer }
output:
  schema:
    type: object
    required: [sum]
    properties:
      sum: { type: integer }
---
def main(input):
    return {"sum": input["a"] + input["b"]}
"""

ECHO_PROGRAM = """---
description: Gives back its input
language: python
---
def main(input):
    return input
"""

RAISING_PROGRAM = """---
language: python
---
def main(input):
    raise ValueError("no invoices")
"""


def fresh_id(prefix: str = "pb") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_playbook(client: httpx.Client, org: str = "acme") -> str:
    playbook = fresh_id()
    response = client.post(f"/v1/orgs/{org}/playbooks", json={"playbook": playbook, "name": "Test"})
    assert response.status_code == 201, response.text
    return f"/v1/orgs/{org}/playbooks/{playbook}"


def create_computation(client: httpx.Client, playbook_url: str, name: str, source: str) -> dict[str, Any]:
    response = client.post(f"{playbook_url}/definitions/computation", json={"name": name, "source": source})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def problem(response: httpx.Response, status: int, reason: str, kind: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["reason"] == reason, body
    assert body["status"] == status
    if kind is not None:
        assert body.get("kind") == kind, body
    return body


def pointers(body: dict[str, Any]) -> list[str]:
    return [error["pointer"] for error in body.get("errors", [])]
