"""The tool loop end to end: the real server, the fake gateway and a real MCP tool server (reasoning-format §7)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import new_playbook, problem
from tests.conformance.reasoning.conftest import HELPER_WITH_TOOLS, define_helper, gateway_settings, run_helper
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import FakeGatewayProcess, McpToolServerProcess, start_mcp_tool_server

RATE_LIMITED = {"status": 429, "error": {"message": "slow down"}, "headers": {"retry-after": "0"}}


@pytest.fixture(scope="module")
def mcp_tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("mcp-tools")))
    yield process
    process.stop()


@pytest.fixture(scope="module")
def tool_server(
    tmp_path_factory: pytest.TempPathFactory, reasoning_gateway: FakeGatewayProcess, mcp_tools: McpToolServerProcess
) -> Iterator[ServerProcess]:
    settings = gateway_settings(reasoning_gateway)
    settings["TOOL_SERVERS"] = json.dumps(
        {
            "helpdesk": {"url": mcp_tools.url, "org": "acme", "request_id": "fake/request_id"},
            "narrow": {"url": mcp_tools.url, "org": "acme", "allowed": ["get_customer"], "record_content": False},
        }
    )
    settings["REASONING_MAX_INPUT_TOKENS"] = "10000"
    server = start_server(Path(tmp_path_factory.mktemp("reasoning-tools")), settings)
    yield server
    assert server.stop() == 0, server.log()


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def _history(client: httpx.Client, playbook: str, run_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()[
        "events"
    ]
    return events


def test_the_model_calls_a_read_only_tool_and_answers(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess, mcp_tools: McpToolServerProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"tool_calls": [_call("call-1", "helpdesk__get_customer", {"id": "c-7"})], "usage": {"prompt_tokens": 50}},
        {"content": "Customer c-7 is on the pro plan.", "usage": {"prompt_tokens": 80, "completion_tokens": 9}},
    )
    run_id = str(uuid.uuid4())
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/get_customer")
        response = run_helper(client, playbook, run_id)
        assert response.status_code == 200, response.text
        assert response.json()["output"] == "Customer c-7 is on the pro plan."
        events = _history(client, playbook, run_id)
        record = client.get(f"{playbook}/runs/{run_id}").json()["record"]
    types = [event["type"] for event in events]
    assert types == ["run_started", "tool_call_started", "tool_call_answered", "run_succeeded"]
    started, answered = events[1]["data"], events[2]["data"]
    assert started["number"] == 1 and started["call_id"] == "call-1"
    assert started["server"] == "helpdesk" and started["tool"] == "get_customer"
    assert started["read_only"] is True and started["content_kept"] is True
    assert answered["number"] == 1 and answered["is_error"] is False
    assert answered["result_bytes"] == len('{"id": "c-7", "plan": "pro"}')
    assert answered["answer"] == '{"id": "c-7", "plan": "pro"}' and started["arguments"] == {"id": "c-7"}
    assert answered["server_request_id"] == "req-c-7"
    assert isinstance(answered["jsonrpc_id"], int | str)
    assert record["usage"]["input"]["total"] == 130
    assert record["usage"]["input"]["total"] == 130
    assert mcp_tools.calls()[-1]["meta"] == {"auto.on/run_id": run_id}
    requests = reasoning_gateway.requests(model)
    assert requests[0]["body"]["tools"][0]["function"]["name"] == "helpdesk__get_customer"
    tool_message = requests[1]["body"]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call-1"
    assert json.loads(tool_message["content"]) == {"id": "c-7", "plan": "pro"}


def test_error_results_refused_arguments_and_repeated_calls_reach_the_model(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    same = _call("c-3", "helpdesk__get_customer", {"id": "x"})
    model = reasoning_gateway.new_script(
        {
            "tool_calls": [
                _call("c-1", "helpdesk__broken", {}),
                _call("c-2", "helpdesk__picky", {"id": "nobody"}),
                same,
                {**same, "id": "c-4"},
                {**same, "id": "c-5"},
                {"id": "c-6", "name": "helpdesk__get_customer", "arguments": "[1]"},
                _call("c-7", "helpdesk__picture", {}),
                {**same, "id": "c-8"},
            ]
        },
        {"content": "Done."},
    )
    run_id = str(uuid.uuid4())
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/*")
        assert run_helper(client, playbook, run_id).status_code == 200
        events = _history(client, playbook, run_id)
    kinds = [(event["type"], event["data"].get("number")) for event in events[1:-1]]
    assert kinds == [
        ("tool_call_started", 1),
        ("tool_call_answered", 1),
        ("tool_call_started", 2),
        ("tool_call_failed", 2),
        ("tool_call_started", 3),
        ("tool_call_answered", 3),
        ("tool_call_started", 4),
        ("tool_call_answered", 4),
        ("tool_call_started", 5),
        ("tool_call_answered", 5),
    ]
    assert events[2]["data"]["is_error"] is True
    assert events[4]["data"]["because"] == "arguments_refused"
    results = {
        m["tool_call_id"]: m for m in reasoning_gateway.requests(model)[1]["body"]["messages"] if m["role"] == "tool"
    }
    assert "the helpdesk is down" in results["c-1"]["content"]
    assert "id must name a customer" in results["c-2"]["content"]
    # README settled point 21: a refused repeat names the most recent earlier identical call that was sent.
    repeated = "The call was not sent: it repeats call c-4 with the same arguments; use call c-4."
    assert results["c-5"]["content"] == repeated
    assert results["c-8"]["content"] == repeated
    assert "not a JSON object" in results["c-6"]["content"]
    assert results["c-7"]["content"] == "[image content (image/png), not shown]"


def test_a_run_that_only_read_ends_tools_unfinished_and_is_not_run_again(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"tool_calls": [_call("c-1", "narrow__get_customer", {"id": "c-7"})]}, RATE_LIMITED, RATE_LIMITED, RATE_LIMITED
    )
    run_id = str(uuid.uuid4())
    with tool_server.client() as client:
        playbook = define_helper(client, model, "narrow/*")
        response = run_helper(client, playbook, run_id)
        body = problem(response, 503, "unavailable", "tools_unfinished")
        assert body["type"] == "https://on.auto/problems/tools_unfinished"
        assert body["because"] == "model_unavailable"
        assert "the get_customer tool of narrow" in body["detail"]
        assert "retry-after" not in response.headers
        record = client.get(f"{playbook}/runs/{run_id}").json()["record"]
        assert set(record) == {"usage", "duration_ms"}
        events = _history(client, playbook, run_id)
        assert "arguments" not in events[1]["data"] and events[1]["data"]["content_kept"] is False
        again = problem(run_helper(client, playbook, run_id), 409, "conflict", "tools_called")
        assert again["because"] == "only_read"
        assert again["type"] == "https://on.auto/problems/tools_called"


def test_a_run_that_may_have_changed_something_ends_effect_unknown(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"tool_calls": [_call("c-1", "helpdesk__create_ticket", {"title": "refund"})]},
        RATE_LIMITED,
        RATE_LIMITED,
        RATE_LIMITED,
    )
    run_id = str(uuid.uuid4())
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/create_ticket")
        body = problem(run_helper(client, playbook, run_id), 409, "conflict", "effect_unknown")
        assert body["because"] == "model_unavailable"
        assert "the create_ticket tool of helpdesk" in body["detail"]
        again = problem(run_helper(client, playbook, run_id), 409, "conflict", "tools_called")
        assert "because" not in again


def test_tools_not_offered_end_before_any_call_and_run_again(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script({"content": "never"})
    with tool_server.client() as client:
        for tools, because in (
            ("elsewhere/x", "tool_server_not_configured"),
            ("narrow/create_ticket", "tool_not_allowed"),
            ("helpdesk/missing", "tool_not_listed"),
        ):
            playbook = define_helper(client, model, tools)
            run_id = str(uuid.uuid4())
            response = run_helper(client, playbook, run_id)
            body = problem(response, 503, "unavailable", "tool_not_offered")
            assert body["because"] == because
            assert "retry-after" not in response.headers
            problem(run_helper(client, playbook, run_id), 503, "unavailable", "tool_not_offered")
    assert reasoning_gateway.requests(model) == []


def test_spent_calls_lead_to_a_final_step_without_tools(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    calls = [_call(f"c-{n}", "helpdesk__get_customer", {"id": str(n)}) for n in range(26)]
    model = reasoning_gateway.new_script({"tool_calls": calls}, {"content": "From the results: all pro."})
    run_id = str(uuid.uuid4())
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/get_customer")
        response = run_helper(client, playbook, run_id)
        assert response.status_code == 200, response.text
        events = _history(client, playbook, run_id)
    assert sum(1 for event in events if event["type"] == "tool_call_started") == 25
    final = reasoning_gateway.requests(model)[1]["body"]
    assert "tools" not in final
    assert all(message["role"] in ("system", "user", "assistant") for message in final["messages"])
    assert "no longer available" in final["messages"][-1]["content"]


def test_a_final_step_that_still_asks_for_tools_has_no_answer(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    calls = [_call(f"c-{n}", "helpdesk__get_customer", {"id": str(n)}) for n in range(25)]
    model = reasoning_gateway.new_script(
        {"tool_calls": calls}, {"tool_calls": [_call("c-99", "helpdesk__get_customer", {"id": "99"})]}
    )
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/get_customer")
        body = problem(run_helper(client, playbook, str(uuid.uuid4())), 503, "unavailable", "tools_unfinished")
        assert body["because"] == "no_answer"


def test_five_server_failures_stop_the_run(tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess) -> None:
    calls = [_call(f"c-{n}", "helpdesk__crash", {"id": str(n)}) for n in range(6)]
    model = reasoning_gateway.new_script({"tool_calls": calls})
    run_id = str(uuid.uuid4())
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/crash")
        body = problem(run_helper(client, playbook, run_id), 409, "conflict", "effect_unknown")
        assert body["because"] == "server_failed"
        events = _history(client, playbook, run_id)
    failed = [event["data"] for event in events if event["type"] == "tool_call_failed"]
    assert [data["because"] for data in failed] == ["server_failure"] * 5
    assert events[-1]["type"] == "run_rejected"


def test_a_429_the_server_asks_to_wait_out_briefly_is_waited_out(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"tool_calls": [_call("c-1", "helpdesk__busy", {}), _call("c-2", "helpdesk__swamped", {})]},
        {"content": "ok"},
    )
    run_id = str(uuid.uuid4())
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/busy, helpdesk/swamped")
        assert run_helper(client, playbook, run_id).status_code == 200
        events = _history(client, playbook, run_id)
    assert [event["type"] for event in events[1:-1]] == [
        "tool_call_started",
        "tool_call_answered",
        "tool_call_started",
        "tool_call_failed",
    ]
    assert events[4]["data"]["because"] == "server_failure"
    results = {
        m["tool_call_id"]: m for m in reasoning_gateway.requests(model)[1]["body"]["messages"] if m["role"] == "tool"
    }
    assert results["c-1"]["content"] == "not busy now"


def test_the_input_token_budget_makes_the_next_step_final(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"tool_calls": [_call("c-1", "helpdesk__get_customer", {"id": "1"})], "usage": {"prompt_tokens": 10000}},
        {"content": "Answered from what I have."},
    )
    with tool_server.client() as client:
        playbook = define_helper(client, model, "helpdesk/get_customer")
        assert run_helper(client, playbook, str(uuid.uuid4())).status_code == 200
    final = reasoning_gateway.requests(model)[1]["body"]
    assert "tools" not in final


def test_a_json_answer_that_does_not_fit_after_a_tool_call_has_no_answer(
    tool_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"tool_calls": [_call("c-1", "helpdesk__create_ticket", {"title": "x"})]}, {"content": "not json"}
    )
    source = HELPER_WITH_TOOLS.format(model=model, tools="helpdesk/create_ticket").replace(
        "tools:", "output: { format: json, schema: { type: object } }\ntools:"
    )
    with tool_server.client() as client:
        playbook = new_playbook(client)
        created = client.post(f"{playbook}/definitions/reasoning", json={"name": "helper", "source": source})
        assert created.status_code == 201, created.text
        body = problem(run_helper(client, playbook, str(uuid.uuid4())), 409, "conflict", "effect_unknown")
    assert body["because"] == "no_answer"
