"""Telemetry end to end: the real server sends its spans to a local OTLP receiver process.

Seeds: http-api.md ("x-trace-id", "traceparent", the event fields `trace_id` and `span_id`), configuration.md
"Telemetry" (`OTEL_EXPORTER_OTLP_ENDPOINT`, `TELEMETRY_CONTENT`)."""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.mcp_client import sse_or_json
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.otlp_receiver import OtlpReceiver, start_otlp_receiver

pytestmark = pytest.mark.slow

ORG, PLAYBOOK = "acme", "finance"
PLAYBOOK_PATH = f"/v1/orgs/{ORG}/playbooks/{PLAYBOOK}"
RUN_PATH = f"{PLAYBOOK_PATH}/definitions/computation/add/run"
ADD = "---\nlanguage: python\n---\ndef main(input):\n    return input['a'] + input['b']\n"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TRACE_ID = re.compile(r"[0-9a-f]{32}")
SPAN_ID = re.compile(r"[0-9a-f]{16}")
Span = dict[str, Any]


def telemetry_settings(receiver: OtlpReceiver, content: bool) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.origin,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "TELEMETRY_CONTENT": "true" if content else "false",
        "LOG_LEVEL": "debug",
        "LOG_FORMAT": "json",
    }


def prepare_playbook(server: ServerProcess) -> None:
    with server.client() as client:
        created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": PLAYBOOK, "name": "Finance"})
        assert created.status_code == 201, created.text
        defined = client.post(f"{PLAYBOOK_PATH}/definitions/computation", json={"name": "add", "source": ADD})
        assert defined.status_code == 201, defined.text


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OtlpReceiver]:
    started = start_otlp_receiver(tmp_path_factory.mktemp("otlp") / "spans.jsonl")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def traced(receiver: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server sending telemetry without content."""
    server = start_server(tmp_path_factory.mktemp("traced"), telemetry_settings(receiver, content=False))
    prepare_playbook(server)
    yield server
    assert server.stop() == 0, server.log()


def new_traceparent() -> tuple[str, str, str]:
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{parent_id}-01", trace_id, parent_id


def run_add(server: ServerProcess, value: dict[str, int], **headers: str) -> httpx.Response:
    with server.client(**headers) as client:
        response = client.post(RUN_PATH, json={"input": value})
    assert response.status_code in (200, 201), response.text
    assert response.json()["output"] == value["a"] + value["b"]
    return response


def spans_of_trace(receiver: OtlpReceiver, trace_id: str, *names: str) -> list[Span]:
    """The trace's spans, once one of each name in `names` arrived (the ledger append twice: start and end)."""

    def complete(spans: list[Span]) -> bool:
        mine = [span for span in spans if span["trace_id"] == trace_id]
        return all(sum(span["name"] == name for span in mine) >= names.count(name) for name in names)

    return [span for span in receiver.wait_for_spans(complete) if span["trace_id"] == trace_id]


def one(spans: list[Span], **fields: Any) -> Span:
    found = [span for span in spans if all(span.get(key) == value for key, value in fields.items())]
    assert len(found) == 1, (fields, spans)
    return found[0]


def run_events(server: ServerProcess, run_id: str) -> list[dict[str, Any]]:
    with server.client() as client:
        response = client.get(f"{PLAYBOOK_PATH}/events", params={"limit": 100})
    assert response.status_code == 200, response.text
    return [event for event in response.json()["events"] if event["metadata"].get("run_id") == run_id]


def test_a_run_s_spans_arrive_with_their_parents_and_continue_the_caller_s_trace(
    traced: ServerProcess, receiver: OtlpReceiver
) -> None:
    traceparent, trace_id, caller_span = new_traceparent()
    response = run_add(traced, {"a": 2, "b": 40}, traceparent=traceparent)
    assert response.headers["x-trace-id"] == trace_id

    spans = spans_of_trace(receiver, trace_id, "run_definition", "run", "sandbox run", "ledger append", "ledger append")
    request = one(spans, name="run_definition")
    assert (request["kind"], request["parent_span_id"]) == ("SPAN_KIND_SERVER", caller_span)
    assert request["attributes"]["http.response.status_code"] == response.status_code
    assert request["attributes"]["auto_runtime.request_id"] == response.headers["x-request-id"]
    assert request["service"] == "auto-runtime"
    run = one(spans, name="run")
    assert run["parent_span_id"] == request["span_id"]
    assert run["attributes"]["auto_runtime.run_id"] == response.json()["run_id"]
    assert run["attributes"]["auto_runtime.definition.name"] == "add"
    sandbox = one(spans, name="sandbox run")
    assert sandbox["parent_span_id"] == run["span_id"]
    appends = [span for span in spans if span["name"] == "ledger append"]
    assert {span["parent_span_id"] for span in appends} == {run["span_id"]}

    events = run_events(traced, response.json()["run_id"])
    assert {event["type"] for event in events} >= {"run_started", "run_succeeded"}
    pairs = {(event["metadata"]["trace_id"], event["metadata"]["span_id"]) for event in events}
    assert pairs == {(trace_id, span["span_id"]) for span in appends}


def test_a_request_without_traceparent_starts_a_trace_named_in_x_trace_id(
    traced: ServerProcess, receiver: OtlpReceiver
) -> None:
    with traced.client() as client:
        response = client.get(PLAYBOOK_PATH)
    assert response.status_code == 200, response.text
    trace_id = response.headers["x-trace-id"]
    assert TRACE_ID.fullmatch(trace_id)
    request = one(spans_of_trace(receiver, trace_id, "get_playbook"), name="get_playbook")
    assert request["parent_span_id"] == ""
    assert request["attributes"]["url.path"] == PLAYBOOK_PATH


def test_health_has_no_trace(traced: ServerProcess, receiver: OtlpReceiver) -> None:
    with traced.client() as client:
        health = client.get("/health")
        marker = client.get(PLAYBOOK_PATH)  # sent after, so once its span arrived, the health span would have too
    assert health.status_code == 200
    assert "x-trace-id" not in health.headers
    assert "x-request-id" in health.headers
    spans = spans_of_trace(receiver, marker.headers["x-trace-id"], "get_playbook")
    assert spans
    assert not [span for span in receiver.spans() if span["attributes"].get("url.path") == "/health"]


def test_refusals_and_unserved_paths_carry_x_trace_id_too(traced: ServerProcess) -> None:
    with traced.client() as client:
        missing = client.get("/v1/nothing-here")
        refused = client.post(RUN_PATH, json={"input": {"a": 1}, "extra": True})
    for response in (missing, refused):
        assert response.status_code >= 400
        assert TRACE_ID.fullmatch(response.headers["x-trace-id"])


def test_mcp_responses_carry_x_trace_id_and_the_tool_call_s_run_is_in_its_trace(
    traced: ServerProcess, receiver: OtlpReceiver
) -> None:
    traceparent, trace_id, caller_span = new_traceparent()
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "run_definition",
            "arguments": {"type": "computation", "name": "add", "input": {"a": 1, "b": 2}},
        },
    }
    with traced.client() as client:
        response = client.post(
            f"/orgs/{ORG}/playbooks/{PLAYBOOK}/mcp",
            headers={**MCP_HEADERS, "MCP-Protocol-Version": "2025-11-25", "traceparent": traceparent},
            json=call,
        )
    assert response.status_code == 200, response.text
    assert "error" not in sse_or_json(response), response.text
    assert response.headers["x-trace-id"] == trace_id

    spans = spans_of_trace(receiver, trace_id, "run_definition", "run", "sandbox run")
    request = one(spans, kind="SPAN_KIND_SERVER", parent_span_id=caller_span)
    assert request["name"] == "run_definition"
    run = one(spans, name="run")
    ancestors = {span["span_id"]: span["parent_span_id"] for span in spans}
    parent = run["parent_span_id"]
    while parent not in ("", request["span_id"]):
        parent = ancestors[parent]
    assert parent == request["span_id"], spans


def test_no_content_is_recorded_without_telemetry_content(traced: ServerProcess, receiver: OtlpReceiver) -> None:
    response = run_add(traced, {"a": 31337, "b": 1})
    spans = spans_of_trace(receiver, response.headers["x-trace-id"], "run", "sandbox run")
    assert not [key for span in receiver.spans() for key in span["attributes"] if key.startswith("content.")]
    assert "31337" not in json.dumps([span["attributes"] for span in spans])


def test_the_log_line_of_a_request_carries_its_request_id_and_trace_id(traced: ServerProcess) -> None:
    with traced.client() as client:
        response = client.get(PLAYBOOK_PATH)
    request_id, trace_id = response.headers["x-request-id"], response.headers["x-trace-id"]

    def request_lines() -> list[dict[str, Any]]:
        entries = [json.loads(line) for line in traced.log().splitlines() if line.startswith("{")]
        return [entry for entry in entries if entry.get("request_id") == request_id and "path" in entry]

    # The line is written once the response was sent: wait for it, within a bound.
    deadline = time.monotonic() + 30.0
    while not request_lines() and time.monotonic() < deadline:
        time.sleep(0.05)
    [line] = request_lines()
    assert (line["level"], line["logger"], line["status"], line["method"]) == ("debug", "auto_runtime.http", 200, "GET")
    assert line["trace_id"] == trace_id
    assert SPAN_ID.fullmatch(line["span_id"])


def test_content_is_recorded_with_telemetry_content(receiver: OtlpReceiver, tmp_path: Path) -> None:
    server = start_server(tmp_path / "content", telemetry_settings(receiver, content=True))
    try:
        prepare_playbook(server)
        response = run_add(server, {"a": 4, "b": 5})
        spans = spans_of_trace(receiver, response.headers["x-trace-id"], "run")
    finally:
        assert server.stop() == 0, server.log()
    run = one(spans, name="run")
    assert json.loads(run["attributes"]["content.input"]) == {"a": 4, "b": 5}
    assert json.loads(run["attributes"]["content.output"])["output"] == 9


def test_with_telemetry_off_every_event_shows_a_pair_and_no_response_a_trace_id(tmp_path: Path) -> None:
    server = start_server(tmp_path / "off")
    try:
        prepare_playbook(server)
        response = run_add(server, {"a": 1, "b": 1})
        assert "x-trace-id" not in response.headers
        with server.client() as client:
            events = client.get(f"{PLAYBOOK_PATH}/events", params={"limit": 100}).json()["events"]
    finally:
        assert server.stop() == 0, server.log()
    assert events
    for event in events:
        assert TRACE_ID.fullmatch(event["metadata"]["trace_id"]), event
        assert SPAN_ID.fullmatch(event["metadata"]["span_id"]), event
    pairs = [(event["metadata"]["trace_id"], event["metadata"]["span_id"]) for event in events]
    assert len(set(pairs)) == len(pairs), "each append records its own pair"


def test_the_start_says_where_traces_go(traced: ServerProcess, receiver: OtlpReceiver) -> None:
    entries = [json.loads(line) for line in traced.log().splitlines() if line.startswith("{")]
    [line] = [entry for entry in entries if entry["logger"] == "auto_runtime.telemetry"]
    assert line["message"] == (f"Telemetry: traces sent over OTLP/HTTP to {receiver.origin}/v1/traces, without content")
