"""Asking a system (`call`), end to end: the real server and a real MCP tool server (interaction-format §2)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.conformance.interactions.conftest import ledger_settings
from tests.conformance.interactions.documents import answer, ask, defined, history_types, open_requests
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import McpToolServerProcess, start_mcp_tool_server

INVOICES = """---
call:
  server: billing
  tool: list_invoices
  with: { customer: '{{ input.customer }}', status: unpaid, limit: '{{ input.count }}' }
  read: /invoices
input:
  schema:
    type: object
    required: [customer, count]
    properties: { customer: { type: string }, count: { type: integer } }
output:
  schema:
    type: array
    items: { type: object, required: [id, total], properties: { id: { type: string }, total: { type: number } } }
---
"""


def say(text: str, *, read: str | None = None, schema: str = "{}", tool: str = "say", server: str = "billing") -> str:
    reading = f"\n  read: {read}" if read else ""
    return (
        f"---\ncall:\n  server: {server}\n  tool: {tool}\n  with: {{ text: '{text}' }}{reading}\n"
        f"output:\n  schema: {schema}\n---\n"
    )


@pytest.fixture(scope="module")
def billing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("billing")), "--interaction-tools")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def server(
    ledger_kind: str, tmp_path_factory: pytest.TempPathFactory, billing: McpToolServerProcess
) -> Iterator[ServerProcess]:
    with ExitStack() as stack:
        settings = ledger_settings(stack, ledger_kind)
        settings["TOOL_SERVERS"] = json.dumps(
            {
                "billing": {"url": billing.url, "org": "acme"},
                "narrow": {"url": billing.url, "org": "acme", "allowed": ["get_customer"]},
            }
        )
        process = start_server(Path(tmp_path_factory.mktemp(f"calls-{ledger_kind}")), settings)
        yield process
        assert process.stop() == 0, process.log()


def run(client: httpx.Client, playbook: str, name: str, value: Any, run_id: str | None = None) -> httpx.Response:
    return ask(client, playbook, name, value, run_id)


def test_a_call_answers_the_value_at_read_and_records_its_call(
    client: httpx.Client, billing: McpToolServerProcess
) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "invoices", INVOICES)
    run_id = str(uuid.uuid4())
    response = run(client, playbook, "invoices", {"customer": "c-7", "count": 2}, run_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "succeeded"
    assert body["output"] == [{"id": "c-7-1", "total": 1}, {"id": "c-7-2", "total": 2}]
    record = client.get(f"{playbook}/runs/{run_id}").json()["record"]
    assert record == {"server": "billing", "tool": "list_invoices", "read": "/invoices"}
    call = [c for c in billing.calls() if c["name"] == "list_invoices"][-1]
    assert call["arguments"] == {"customer": "c-7", "status": "unpaid", "limit": 2}
    assert call["meta"]["auto.on/run_id"] == run_id
    assert history_types(client, playbook, run_id) == [
        "run_started",
        "tool_call_started",
        "tool_call_answered",
        "run_succeeded",
    ]
    assert open_requests(client, playbook)["interactions"] == []
    problem(answer(client, playbook, run_id, {}), 409, "conflict")
    problem(client.post(f"{playbook}/runs/{run_id}/cancel", json={}), 409, "conflict")
    assert run(client, playbook, "invoices", {"customer": "c-7", "count": 2}, run_id).json()["output"] == body["output"]


def test_a_call_that_cannot_run_sends_nothing(client: httpx.Client, billing: McpToolServerProcess) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "invoices", INVOICES)
    missing = problem(run(client, playbook, "invoices", {"customer": "c-7"}), 422, "invalid_input")
    assert "/input/count" in pointers(missing) or pointers(missing) == ["/input"]
    defined(client, playbook, "nowhere", say("hi", server="nowhere"))
    body = problem(run(client, playbook, "nowhere", {}), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_server_not_configured"
    defined(client, playbook, "narrowed", say("hi", server="narrow"))
    body = problem(run(client, playbook, "narrowed", {}), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_not_allowed"
    defined(client, playbook, "unlisted", say("hi", tool="no_such_tool"))
    body = problem(run(client, playbook, "unlisted", {}), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_not_listed"


@pytest.mark.parametrize(
    ("source", "status", "reason", "kind", "because"),
    [
        (say("hi", tool="picky"), 409, "conflict", "unworkable", None),
        (say("hi", tool="broken"), 409, "conflict", "effect_unknown", "tool_error"),
        (say("hi", tool="crash"), 409, "conflict", "effect_unknown", "server_failed"),
        (say("hi", tool="picture"), 409, "conflict", "unworkable", None),
        (say("not json", read="/x"), 409, "conflict", "unworkable", None),
        (say('{"x": 1}', read="/y"), 409, "conflict", "unworkable", None),
        (say('{"x": 1}', read="/x", schema="{ type: string }"), 409, "conflict", "unworkable", None),
    ],
)
def test_every_ending_of_a_call(
    client: httpx.Client, source: str, status: int, reason: str, kind: str, because: str | None
) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "asks", source)
    run_id = str(uuid.uuid4())
    body = problem(run(client, playbook, "asks", {}, run_id), status, reason, kind)
    assert body.get("because") == because
    if kind == "unworkable" and "picky" not in source:
        assert body["detail"].endswith("running the function again calls it again.")
    again = problem(run(client, playbook, "asks", {}, run_id), 409, "conflict", "tools_called")
    assert "because" not in again


def test_a_read_only_tool_that_fails_is_tools_unfinished(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    source = INVOICES.replace("limit: '{{ input.count }}'", "limit: 'many'")
    defined(client, playbook, "invoices", source)
    run_id = str(uuid.uuid4())
    response = run(client, playbook, "invoices", {"customer": "c", "count": 1}, run_id)
    body = problem(response, 503, "unavailable", "tools_unfinished")
    assert body["because"] == "server_failed"
    assert "retry-after" not in response.headers
    again = problem(run(client, playbook, "invoices", {"customer": "c", "count": 1}, run_id), 409, "conflict")
    assert again["kind"] == "tools_called" and again["because"] == "only_read"


def test_a_structure_among_text_in_the_arguments_is_unworkable(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "mixed", say("about {{ input.thing }}"))
    body = problem(run(client, playbook, "mixed", {"thing": {"a": 1}}), 409, "conflict", "unworkable")
    assert "write | json after it" in body["detail"]
    said = run(client, playbook, "mixed", {"thing": "tea"})
    assert said.status_code == 200, said.text
    assert said.json()["output"] == "about tea"
