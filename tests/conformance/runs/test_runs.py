"""Seeds, "Runs and results" and "Retrying under a run id", through the real server with computation runs."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.conformance.helpers import (
    ADD_PROGRAM,
    ECHO_PROGRAM,
    RAISING_PROGRAM,
    create_computation,
    new_playbook,
    pointers,
    problem,
)
from tests.e2e.server_process import ServerProcess


def _run(client: httpx.Client, playbook: str, name: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"{playbook}/definitions/computation/{name}/run", json=body)


def _run_starts(client: httpx.Client, playbook: str, run_id: str) -> int:
    events = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()["events"]
    return sum(1 for event in events if event["type"] == "run_started")


def test_a_run_succeeds_with_its_output_and_get_run_adds_the_record(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        response = _run(client, playbook, "add", {"input": {"a": 2, "b": 40}})
        assert response.status_code == 200, response.text
        run = response.json()
        assert run["status"] == "succeeded"
        assert run["output"] == {"sum": 42}
        assert run["type"] == "computation" and run["name"] == "add" and run["definition_version"] == 1
        assert uuid.UUID(run["run_id"])
        assert "record" not in run
        read = client.get(f"{playbook}/runs/{run['run_id']}").json()
        assert read["output"] == {"sum": 42}
        assert read["record"]["language"] == "python"
        assert read["started_by"] == "local"


def test_an_input_that_does_not_match_is_invalid_input_in_the_schema_words(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        body = problem(_run(client, playbook, "add", {"input": {"a": "two", "b": 1}}), 422, "invalid_input")
        assert pointers(body) == ["/input/a"]
        assert body["errors"][0]["detail"].startswith("a, The first number, such as 2: ")
        missing = problem(_run(client, playbook, "add", {"input": {"a": 1}}), 422, "invalid_input")
        assert "expected the field b" in missing["detail"]


def test_the_input_limits_are_256_kib_and_512_levels(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        deep: Any = 1
        for _ in range(513):
            deep = [deep]
        assert pointers(problem(_run(client, playbook, "echo", {"input": deep}), 422, "invalid_input")) == ["/input"]
        big = "x" * (256 * 1024)
        assert pointers(problem(_run(client, playbook, "echo", {"input": big}), 422, "invalid_input")) == ["/input"]
        fits = "x" * (256 * 1024 - 2)
        assert _run(client, playbook, "echo", {"input": fits}).status_code == 200
        very_deep = '{"input": ' + "[" * 100_000 + "]" * 100_000 + "}"
        response = client.post(
            f"{playbook}/definitions/computation/echo/run",
            content=very_deep.encode(),
            headers={"Content-Type": "application/json"},
        )
        assert pointers(problem(response, 422, "invalid_input")) == ["/input"]


def test_a_program_that_raises_is_unworkable_and_runs_again_under_its_id(local_server: ServerProcess) -> None:
    run_id = str(uuid.uuid4())
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "fails", RAISING_PROGRAM)
        first = problem(_run(client, playbook, "fails", {"input": {}, "run_id": run_id}), 409, "conflict", "unworkable")
        assert first["detail"] == "Line 5 of the program raised ValueError: no invoices"
        problem(_run(client, playbook, "fails", {"input": {}, "run_id": run_id}), 409, "conflict", "unworkable")
        assert _run_starts(client, playbook, run_id) == 2
        listed = client.get(f"{playbook}/runs", params={"status": "rejected"}).json()["runs"]
        assert listed[0]["rejection"] == {"reason": "conflict", "kind": "unworkable"}


def test_a_succeeded_run_answers_again_without_running(local_server: ServerProcess) -> None:
    run_id = str(uuid.uuid4())
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        first = _run(client, playbook, "add", {"input": {"a": 1, "b": 2}, "run_id": run_id})
        again = _run(client, playbook, "add", {"input": {"b": 2, "a": 1}, "run_id": run_id})
        assert again.status_code == 200
        assert again.json()["output"] == first.json()["output"] == {"sum": 3}
        assert _run_starts(client, playbook, run_id) == 1


def test_an_invalid_input_rejection_answers_again(local_server: ServerProcess) -> None:
    run_id = str(uuid.uuid4())
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        first = problem(_run(client, playbook, "add", {"input": {"a": 1}, "run_id": run_id}), 422, "invalid_input")
        again = problem(_run(client, playbook, "add", {"input": {"a": 1}, "run_id": run_id}), 422, "invalid_input")
        assert again["errors"] == first["errors"]
        assert _run_starts(client, playbook, run_id) == 1


def test_a_run_id_reused_for_another_input_or_definition_is_a_conflict(local_server: ServerProcess) -> None:
    run_id = str(uuid.uuid4())
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        assert _run(client, playbook, "add", {"input": {"a": 1, "b": 2}, "run_id": run_id}).status_code == 200
        problem(_run(client, playbook, "add", {"input": {"a": 1, "b": 3}, "run_id": run_id}), 409, "conflict")
        problem(_run(client, playbook, "echo", {"input": {"a": 1, "b": 2}, "run_id": run_id}), 409, "conflict")


def test_a_run_id_must_be_a_uuid(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        body = problem(_run(client, playbook, "echo", {"input": 1, "run_id": "not-a-uuid"}), 422, "invalid_input")
        assert pointers(body) == ["/run_id"]


def test_a_run_that_does_not_exist_is_not_found(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        problem(client.get(f"{playbook}/runs/{uuid.uuid4()}"), 404, "not_found")
        problem(client.get(f"{playbook}/runs/{uuid.uuid4()}/history"), 404, "not_found")


def test_list_runs_newest_first_with_filters_and_pages(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        ids = [_run(client, playbook, "add", {"input": {"a": n, "b": n}}).json()["run_id"] for n in range(3)]
        echo_id = _run(client, playbook, "echo", {"input": "hi"}).json()["run_id"]
        listed = client.get(f"{playbook}/runs").json()
        assert [run["run_id"] for run in listed["runs"]] == [echo_id, *reversed(ids)]
        assert listed["has_more"] is False and listed["next_cursor"] is None
        assert "output" not in listed["runs"][0] and "record" not in listed["runs"][0]
        only_echo = client.get(f"{playbook}/runs", params={"type": "computation", "name": "echo"}).json()["runs"]
        assert [run["run_id"] for run in only_echo] == [echo_id]
        seen: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1}
            if cursor:
                params["cursor"] = cursor
            page = client.get(f"{playbook}/runs", params=params).json()
            seen += [run["run_id"] for run in page["runs"]]
            cursor = page["next_cursor"]
            assert page["has_more"] is (cursor is not None)
            if cursor is None:
                break
        assert seen == [echo_id, *reversed(ids)]
        other = new_playbook(client)
        foreign = client.get(f"{playbook}/runs", params={"limit": 1}).json()["next_cursor"]
        assert pointers(problem(client.get(f"{other}/runs", params={"cursor": foreign}), 422, "invalid_input")) == [
            "/cursor"
        ]
        for bad in ("0", "101"):
            assert pointers(problem(client.get(f"{playbook}/runs", params={"limit": bad}), 422, "invalid_input")) == [
                "/limit"
            ]


def test_a_run_history_is_oldest_first_each_event_after_its_cause(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        run_id = _run(client, playbook, "add", {"input": {"a": 1, "b": 1}}).json()["run_id"]
        history = client.get(f"{playbook}/runs/{run_id}/history").json()
        events = history["events"]
        assert [event["type"] for event in events] == ["run_started", "run_succeeded"]
        assert events[1]["metadata"]["causation_id"] == events[0]["id"]
        assert events[0]["metadata"]["causation_id"] is None
        assert events[0]["metadata"]["correlation_id"] == run_id
        newest = client.get(f"{playbook}/runs/{run_id}/history", params={"order": "desc"}).json()["events"]
        assert [event["type"] for event in newest] == ["run_succeeded", "run_started"]
        first_page = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 1}).json()
        assert first_page["has_more"] is True
        second = client.get(
            f"{playbook}/runs/{run_id}/history", params={"limit": 1, "cursor": first_page["next_cursor"]}
        ).json()
        assert [event["type"] for event in second["events"]] == ["run_succeeded"]


def test_cancel_run_refuses_runs_that_do_not_wait(local_server: ServerProcess) -> None:
    """Seeds, "Cancelling a run": no run is not_found; an ended run, and a run that ends within the request
    that started it, are conflicts; a reason has at most 1,024 characters and no control character."""
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        problem(client.post(f"{playbook}/runs/{uuid.uuid4()}/cancel"), 404, "not_found")
        run_id = _run(client, playbook, "echo", {"input": 1}).json()["run_id"]
        problem(client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "No longer needed"}), 409, "conflict")
        for bad in ("", "x" * 1025, "line\nbreak"):
            body = problem(client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": bad}), 422, "invalid_input")
            assert pointers(body) == ["/reason"]
