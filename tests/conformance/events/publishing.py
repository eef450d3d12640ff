"""Helpers of the publishing tests: a fresh playbook, the events route, and the pointers of a refusal."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx

from tests.e2e.server_process import ServerProcess

ISO_MILLISECONDS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def new_playbook(server: ServerProcess, org: str = "acme") -> str:
    playbook = f"ev-{uuid.uuid4().hex[:12]}"
    with server.client() as client:
        response = client.post(f"/v1/orgs/{org}/playbooks", json={"playbook": playbook, "name": "Events"})
    assert response.status_code == 201, response.text
    return playbook


def events_url(playbook: str, org: str = "acme") -> str:
    return f"/v1/orgs/{org}/playbooks/{playbook}/events"


def publish(server: ServerProcess, playbook: str, event: Any) -> httpx.Response:
    with server.client() as client:
        return client.post(events_url(playbook), json={"event": event})


def publish_raw(server: ServerProcess, playbook: str, body: str) -> httpx.Response:
    """Sends a body as written, for text JSON can hold but Python's encoder would not write (lone surrogates)."""
    with server.client() as client:
        return client.post(
            events_url(playbook), content=body.encode("utf-8"), headers={"Content-Type": "application/json"}
        )


def pointers_of(response: httpx.Response) -> list[str]:
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["reason"] == "invalid_input"
    return [error["pointer"] for error in problem["errors"]]


def published_events(server: ServerProcess, playbook: str) -> list[dict[str, Any]]:
    """Every `event_published` event of the playbook, oldest first."""
    with server.client() as client:
        response = client.get(events_url(playbook), params={"type": "event_published", "order": "asc", "limit": 100})
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events
