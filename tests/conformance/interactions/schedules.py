"""Reading a delivery's attempts and their recorded times through the real server, and moving its clock (a
test's, `tests/e2e/moved_clock.py`) to each next attempt's due time (interaction-format §4.1): shared by the
interaction and prediction conformance tests of the schedule."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx

from auto_runtime.functions.interaction.delivery_decisions import next_attempt_wait
from tests.conformance.interactions.documents import POLL_LIMIT_S
from tests.e2e.moved_clock import now, set_to

ATTEMPTS = 5


def moment_of(event: dict[str, Any]) -> datetime:
    """When the event was recorded (its `metadata.at`, by the server's clock)."""
    return datetime.fromisoformat(str(event["metadata"]["at"]).replace("Z", "+00:00"))


def history(client: httpx.Client, playbook: str, run_id: str) -> list[dict[str, Any]]:
    response = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100})
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def until(found: Callable[[], bool], what: str) -> None:
    """Polls `found` until it holds; fails after `POLL_LIMIT_S` (a bound, not a timing)."""
    deadline = time.monotonic() + POLL_LIMIT_S
    while not found():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def attempts_ended(client: httpx.Client, playbook: str, run_id: str, count: int) -> list[dict[str, Any]]:
    """The run's history once `count` attempts ended (each with `delivery_failed`)."""
    events: list[dict[str, Any]] = []

    def ended_enough() -> bool:
        events[:] = history(client, playbook, run_id)
        return len(of_type(events, "delivery_failed")) >= count

    until(ended_enough, f"attempt {count} of {run_id} did not end")
    return events


def attempts_on_schedule(client: httpx.Client, playbook: str, run_id: str, retry_after_ms: int | None) -> None:
    """Moves the clock to each next attempt's due time, and checks each start against the previous end."""
    for number in range(1, ATTEMPTS):
        events = attempts_ended(client, playbook, run_id, number)
        assert len(of_type(events, "delivery_started")) == number, events  # nothing before its time
        failed = of_type(events, "delivery_failed")[-1]
        assert failed["data"].get("retry_after_ms") == retry_after_ms, failed
        wait = next_attempt_wait(number, retry_after_ms)
        set_to(client, max(moment_of(failed) + wait, now(client)))
        events = attempts_ended(client, playbook, run_id, number + 1)
        started = of_type(events, "delivery_started")[number]
        assert started["data"]["number"] == number + 1
        # Due at the clock's reading as the attempt ended plus the wait; that reading comes a moment before the
        # failure's own stamp, hence the few seconds' allowance (far below the schedule's shortest wait, a minute).
        assert moment_of(started) >= moment_of(failed) + wait - timedelta(seconds=5), (failed, started)
