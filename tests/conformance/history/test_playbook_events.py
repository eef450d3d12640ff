"""Seeds, "The playbook's events", "Event fields", "What data shows", "Reading one event", "Paging"."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conformance.helpers import ECHO_PROGRAM, create_computation, new_playbook, pointers, problem
from tests.e2e.server_process import ServerProcess

FIRST_SEVEN = ["stream", "position", "global_position", "correlation_id", "causation_id", "at", "by"]


def test_events_show_definitions_and_runs_newest_first_with_their_fields(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        run = client.post(f"{playbook}/definitions/computation/echo/run", json={"input": {"n": 1}}).json()
        page = client.get(f"{playbook}/events").json()
    types = [event["type"] for event in page["events"]]
    assert types == ["run_succeeded", "run_started", "definition_created"]
    for event in page["events"]:
        assert set(event) == {"id", "type", "summary", "data", "metadata"}
        assert list(event["metadata"])[:7] == FIRST_SEVEN
        assert event["summary"].endswith(".")
    started = page["events"][1]
    assert started["metadata"]["run_id"] == run["run_id"]
    assert started["metadata"]["definition"] == {"type": "computation", "name": "echo", "version": 1}
    assert started["metadata"]["stream"].endswith(f"/runs/{run['run_id']}")
    created = page["events"][2]
    assert "source" not in created["data"] and created["data"]["source_bytes"] > 0


def test_filters_by_type_since_and_run_tree(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        first = client.post(f"{playbook}/definitions/computation/echo/run", json={"input": 1}).json()["run_id"]
        client.post(f"{playbook}/definitions/computation/echo/run", json={"input": 2})
        only_started = client.get(f"{playbook}/events", params={"type": "run_started"}).json()["events"]
        assert len(only_started) == 2
        tree = client.get(f"{playbook}/events", params={"run_id": first, "order": "asc"}).json()["events"]
        assert [event["type"] for event in tree] == ["run_started", "run_succeeded"]
        future = client.get(f"{playbook}/events", params={"since": "2999-01-01T00:00:00Z"}).json()
        assert future["events"] == []
        past = client.get(f"{playbook}/events", params={"since": "2020-01-01T00:00:00+02:00", "order": "asc"})
        assert past.json()["events"][0]["type"] == "definition_created"


def test_since_must_be_a_real_time_with_its_offset(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        for bad in ("2026-10-05T24:00:00Z", "2026-02-30T09:00:00Z", "2026-10-05T09:00:00", "yesterday"):
            response = client.get(f"{playbook}/events", params={"since": bad})
            assert pointers(problem(response, 422, "invalid_input")) == ["/since"], bad


def test_large_values_show_as_sizes_and_get_event_reads_them_whole(local_server: ServerProcess) -> None:
    big = {"text": "x" * 3000}
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        client.post(f"{playbook}/definitions/computation/echo/run", json={"input": big})
        succeeded = client.get(f"{playbook}/events", params={"type": "run_succeeded"}).json()["events"][0]
        assert "output" not in succeeded["data"]
        assert succeeded["data"]["output_bytes"] == len('{"text":""}') + 3000
        full = client.get(f"{playbook}/events/{succeeded['id']}").json()
    assert full["data"]["output"] == big
    assert full["metadata"] == succeeded["metadata"]
    assert full["summary"] == succeeded["summary"]


def test_get_event_ids(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        missing = str(uuid.uuid4())
        problem(client.get(f"{playbook}/events/{missing}"), 404, "not_found")
        problem(client.get(f"{playbook}/events/{missing}_3"), 404, "not_found")
        for bad in (f"{missing}_0", f"{missing}_02", "not-an-id"):
            assert pointers(problem(client.get(f"{playbook}/events/{bad}"), 422, "invalid_input")) == ["/event_id"]
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        event_id = client.get(f"{playbook}/events").json()["events"][0]["id"]
        other = new_playbook(client)
        problem(client.get(f"{other}/events/{event_id}"), 404, "not_found")


def test_pages_of_events_and_foreign_cursors(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        for n in range(3):
            client.post(f"{playbook}/definitions/computation/echo/run", json={"input": n})
        seen: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 2, "order": "asc"}
            if cursor:
                params["cursor"] = cursor
            page = client.get(f"{playbook}/events", params=params).json()
            seen += [event["type"] for event in page["events"]]
            cursor = page["next_cursor"]
            if cursor is None:
                assert page["has_more"] is False
                break
        assert seen == ["definition_created"] + ["run_started", "run_succeeded"] * 3
        cursor = client.get(f"{playbook}/events", params={"limit": 1}).json()["next_cursor"]
        other = new_playbook(client)
        response = client.get(f"{other}/events", params={"cursor": cursor})
        assert pointers(problem(response, 422, "invalid_input")) == ["/cursor"]
