"""`execute` (HTTP page "Calling a tool by hand", "Tool-call content"), end to end through the real server: its
fields and outcomes, its refusals, and the facts it records on a stream of its own."""

from __future__ import annotations

import hashlib
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.conformance.tools.conftest import ToolsServer
from tests.e2e.moved_clock import advance

ISO_MILLISECONDS = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"


def _execute(client: httpx.Client, playbook: str, server: str, tool: str, arguments: Any = None) -> httpx.Response:
    body = {} if arguments is None else {"arguments": arguments}
    return client.post(f"{playbook}/tool-servers/{server}/tools/{tool}/execute", json=body)


def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _events(client: httpx.Client, playbook: str) -> list[dict[str, Any]]:
    response = client.get(f"{playbook}/events", params={"order": "asc", "limit": 100})
    assert response.status_code == 200, response.text
    return [event for event in response.json()["events"] if event["type"].startswith("tool_call_")]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_result_answers_every_field(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _ok(_execute(client, playbook, "helpdesk", "get_customer", {"id": "c-7"}))
    assert set(body) == {
        "call_id",
        "server",
        "tool",
        "outcome",
        "text",
        "answer",
        "result_bytes",
        "duration_ms",
        "server_request_id",
        "called_at",
    }
    assert body["server"] == "helpdesk" and body["tool"] == "get_customer"
    assert body["outcome"] == "result"
    assert body["text"] == '{"id": "c-7", "plan": "pro"}'
    assert body["answer"] == {"id": "c-7", "plan": "pro"}
    assert body["result_bytes"] == len(body["text"].encode())
    assert isinstance(body["duration_ms"], int) and body["duration_ms"] >= 0
    assert body["server_request_id"] == "req-c-7"
    assert re.match(ISO_MILLISECONDS, body["called_at"])
    assert tools_server.fakes.helpdesk.calls()[-1]["meta"] == {"auto.on/run_id": body["call_id"]}


def test_arguments_default_to_an_empty_object(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _ok(_execute(client, playbook, "helpdesk", "create_ticket"))
    assert body["outcome"] == "result" and body["text"] == "created None"
    assert tools_server.fakes.helpdesk.calls()[-1]["arguments"] == {}
    assert "server_request_id" not in body


def test_the_outcomes_a_call_can_end_with(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        error = _ok(_execute(client, playbook, "helpdesk", "broken", {}))
        refused = _ok(_execute(client, playbook, "helpdesk", "picky", {"id": "x"}))
        failing = _ok(_execute(client, playbook, "helpdesk", "crash", {}))
        too_large = _ok(_execute(client, playbook, "notes", "huge", {}))
        picture = _ok(_execute(client, playbook, "helpdesk", "picture", {}))
        plain = _ok(_execute(client, playbook, "billing", "plainText", {}))
    assert error["outcome"] == "tool_error" and error["text"] == "the helpdesk is down"
    assert error["answer"] == "the helpdesk is down"
    assert refused["outcome"] == "tool_error"
    assert refused["text"] == "The tool server refused the arguments: id must name a customer."
    assert refused["result_bytes"] is None and "answer" not in refused
    assert failing["outcome"] == "server_failure" and failing["result_bytes"] is None
    assert too_large["outcome"] == "too_large" and too_large["result_bytes"] is None
    assert picture["outcome"] == "result" and picture["text"] == "[image content (image/png), not shown]"
    assert "answer" not in picture
    assert plain["outcome"] == "result" and plain["answer"] == "plain words"


def test_the_refusals_call_nothing(tools_server: ToolsServer) -> None:
    calls_before = len(tools_server.fakes.helpdesk.calls())
    with tools_server.client() as client:
        playbook = new_playbook(client)
        for server, tool, because in (
            ("elsewhere", "get_customer", "tool_server_not_configured"),
            ("narrow", "broken", "tool_not_allowed"),
            ("helpdesk", "nothing", "tool_not_listed"),
        ):
            refused = problem(_execute(client, playbook, server, tool, {}), 503, "unavailable", "tool_not_offered")
            assert refused["because"] == because
        down = problem(_execute(client, playbook, "down", "anything", {}), 503, "unavailable", "tool_server_failed")
        assert down["because"] == "unreachable"
        big = _execute(client, playbook, "helpdesk", "get_customer", {"id": "x" * (16 * 1024)})
        assert pointers(problem(big, 422, "invalid_input")) == ["/arguments"]
        not_object = _execute(client, playbook, "helpdesk", "get_customer", "text")
        assert pointers(problem(not_object, 422, "invalid_input")) == ["/arguments"]
        assert _events(client, playbook) == []
    assert len(tools_server.fakes.helpdesk.calls()) == calls_before


def test_each_call_is_recorded_on_its_own_stream_with_no_run(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _ok(_execute(client, playbook, "helpdesk", "get_customer", {"id": "c-9"}))
        events = _events(client, playbook)
        runs = client.get(f"{playbook}/runs").json()["runs"]
        history = client.get(f"{playbook}/runs/{body['call_id']}/history")
        full = client.get(f"{playbook}/events/{events[1]['id']}").json()
    assert runs == []
    problem(history, 404, "not_found")
    assert [event["type"] for event in events] == ["tool_call_started", "tool_call_answered"]
    started, answered = events
    playbook_id = playbook.rsplit("/", 1)[1]
    for event in events:
        metadata = event["metadata"]
        assert metadata["stream"] == f"playbook/acme/{playbook_id}/tool-calls/{body['call_id']}"
        assert metadata["by"] == "local" and "run_id" not in metadata and metadata["correlation_id"] is None
    assert started["metadata"]["causation_id"] is None
    assert answered["metadata"]["causation_id"] == started["id"]
    arguments_text = '{"id":"c-9"}'
    assert started["data"] == {
        "number": 1,
        "call_id": body["call_id"],
        "server": "helpdesk",
        "tool": "get_customer",
        "arguments_bytes": len(arguments_text),
        "arguments_sha256": _sha256(arguments_text),
        "arguments": {"id": "c-9"},
        "content_kept": True,
        "read_only": True,
    }
    data = answered["data"]
    assert data["is_error"] is False and data["result_bytes"] == body["result_bytes"]
    assert data["result_sha256"] == _sha256(body["text"]) and data["answer"] == body["text"]
    assert data["server_request_id"] == "req-c-9" and data["content_kept"] is True
    assert full["data"]["answer"] == body["text"]


def test_record_content_off_keeps_sizes_but_not_the_content(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _ok(_execute(client, playbook, "narrow", "get_customer", {"id": "c-1"}))
        started, answered = _events(client, playbook)
    assert body["answer"] == {"id": "c-1", "plan": "pro"}
    assert started["data"]["content_kept"] is False and started["data"]["arguments_bytes"] == len('{"id":"c-1"}')
    assert "arguments" not in started["data"] and "arguments_sha256" not in started["data"]
    assert answered["data"]["content_kept"] is False and answered["data"]["result_bytes"] == body["result_bytes"]
    assert "answer" not in answered["data"] and "result_sha256" not in answered["data"]


def test_a_call_that_failed_records_why(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        _ok(_execute(client, playbook, "helpdesk", "picky", {"id": "x"}))
        started, failed = _events(client, playbook)
    assert started["type"] == "tool_call_started" and "read_only" not in started["data"]
    assert failed["type"] == "tool_call_failed"
    assert failed["data"]["because"] == "arguments_refused" and failed["data"]["number"] == 1
    assert isinstance(failed["data"]["duration_ms"], int)


def test_a_large_result_is_shown_in_the_history_by_its_size(tools_server: ToolsServer) -> None:
    text = "y" * 3000
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _ok(_execute(client, playbook, "notes", "echo", {"text": text}))
        _, answered = _events(client, playbook)
        full = client.get(f"{playbook}/events/{answered['id']}").json()
    assert body["text"] == text and body["answer"] == text
    assert "answer" not in answered["data"] and answered["data"]["answer_bytes"] == len(json.dumps(text))
    assert full["data"]["answer"] == text


def test_a_stdio_server_that_crashes_mid_call_is_a_server_failure_and_the_next_call_works(
    tools_server: ToolsServer,
) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        crashed = _ok(_execute(client, playbook, "notes", "crash", {}))
        after = _ok(_execute(client, playbook, "notes", "echo", {"text": "back"}))
        events = _events(client, playbook)
    assert crashed["outcome"] == "server_failure" and crashed["result_bytes"] is None
    assert after["outcome"] == "result" and after["text"] == "back"
    assert [event["type"] for event in events] == [
        "tool_call_started",
        "tool_call_failed",
        "tool_call_started",
        "tool_call_answered",
    ]
    assert events[1]["data"]["because"] == "server_failure"


def test_a_tool_that_never_answers_is_cut_at_thirty_seconds_while_the_server_stays_responsive(
    tools_server: ToolsServer,
) -> None:
    if tools_server.database_url is not None:
        pytest.skip("the call's 30 s limit is the tool client's, not the ledger's: measured once, on SQLite")
    with tools_server.client() as client, httpx.Client(base_url=tools_server.server.base_url, timeout=120) as slow:
        playbook = new_playbook(client)
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(_execute, slow, playbook, "notes", "hang", {})
            while not _events(client, playbook):  # the call is sent once its start is recorded
                assert not pending.done(), pending.result().text
                time.sleep(0.05)
            assert client.get("/health").status_code == 200
            meanwhile = _ok(_execute(client, playbook, "notes", "echo", {"text": "still here"}))
            advance(client, "PT30S")  # the server's clock (a test's) past the call's 30 s, instead of waiting
            hung = _ok(pending.result())
        failed = next(event for event in _events(client, playbook) if event["type"] == "tool_call_failed")
    assert meanwhile["text"] == "still here"
    assert hung["outcome"] == "timed_out" and hung["result_bytes"] is None
    assert hung["text"] == "The tool did not answer within 30 seconds."
    assert failed["data"]["because"] == "timed_out"
    assert failed["metadata"]["stream"].endswith(hung["call_id"])
