"""A reasoning run's model calls and tool call in its trace: the real server, the fake model gateway, the fake MCP
tool server and the OTLP receiver, all real processes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import (
    FakeGatewayProcess,
    McpToolServerProcess,
    start_fake_gateway,
    start_mcp_tool_server,
)
from tests.fakes.otlp_receiver import OtlpReceiver, start_otlp_receiver
from tests.telemetry.test_traces import ORG, PLAYBOOK, PLAYBOOK_PATH, one, spans_of_trace, telemetry_settings

pytestmark = pytest.mark.slow

SOURCE = """---
model: fake/{model}
tools: [helpdesk/get_customer]
---
Help customer {{{{ input.name }}}}.
"""


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OtlpReceiver]:
    started = start_otlp_receiver(tmp_path_factory.mktemp("otlp") / "spans.jsonl")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def gateway() -> Iterator[FakeGatewayProcess]:
    process = start_fake_gateway()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def helpdesk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("helpdesk")))
    yield process
    process.stop()


def start_reasoning_server(
    folder: Path, receiver: OtlpReceiver, gateway: FakeGatewayProcess, helpdesk: McpToolServerProcess, content: bool
) -> ServerProcess:
    entry = {"name": "fake", "base_url": gateway.base_url, "api_key_env": "FAKE_GATEWAY_KEY"}
    settings = {
        **telemetry_settings(receiver, content),
        "MODEL_GATEWAYS": json.dumps([entry]),
        "FAKE_GATEWAY_KEY": "fake-gateway-key-0123456789",
        "TOOL_SERVERS": json.dumps({"helpdesk": {"url": helpdesk.url, "org": ORG}}),
    }
    server = start_server(folder, settings)
    with server.client() as client:
        created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": PLAYBOOK, "name": "Finance"})
        assert created.status_code == 201, created.text
    return server


def reasoning_trace(server: ServerProcess, gateway: FakeGatewayProcess, receiver: OtlpReceiver) -> list[dict[str, Any]]:
    """Runs a reasoning function that calls `get_customer` once, then answers; the spans of its trace."""
    model = gateway.new_script(
        {
            "tool_calls": [
                {"id": "call-1", "name": "helpdesk__get_customer", "arguments": json.dumps({"id": "cust-zq"})}
            ],
            "usage": {"prompt_tokens": 50},
        },
        {"content": "Done.", "usage": {"prompt_tokens": 80, "completion_tokens": 2}},
    )
    with server.client() as client:
        defined = client.post(
            f"{PLAYBOOK_PATH}/definitions/reasoning", json={"name": "helper", "source": SOURCE.format(model=model)}
        )
        assert defined.status_code == 201, defined.text
        response = client.post(f"{PLAYBOOK_PATH}/definitions/reasoning/helper/run", json={"input": {"name": "Ada"}})
    assert response.status_code in (200, 201), response.text
    assert response.json()["output"] == "Done."
    return spans_of_trace(receiver, response.headers["x-trace-id"], "run", "model call", "model call", "tool call")


def test_model_calls_and_tool_calls_are_children_of_the_run_without_content(
    receiver: OtlpReceiver, gateway: FakeGatewayProcess, helpdesk: McpToolServerProcess, tmp_path: Path
) -> None:
    server = start_reasoning_server(tmp_path / "server", receiver, gateway, helpdesk, content=False)
    try:
        spans = reasoning_trace(server, gateway, receiver)
    finally:
        assert server.stop() == 0, server.log()
    run = one(spans, name="run")
    calls = [span for span in spans if span["name"] in ("model call", "tool call")]
    assert len(calls) == 3
    assert {span["parent_span_id"] for span in calls} == {run["span_id"]}
    assert {span["kind"] for span in calls} == {"SPAN_KIND_CLIENT"}
    tool = one(spans, name="tool call")
    assert (tool["attributes"]["gen_ai.tool.name"], tool["attributes"]["auto_runtime.tool.server"]) == (
        "get_customer",
        "helpdesk",
    )
    model = next(span for span in spans if span["name"] == "model call")
    assert model["attributes"]["gen_ai.provider.name"] == "fake"
    assert not [key for span in spans for key in span["attributes"] if key.startswith("content.")]
    values = json.dumps([span["attributes"] for span in spans])
    assert "Ada" not in values and "cust-zq" not in values


def test_prompts_answers_tool_arguments_and_results_are_content_with_telemetry_content(
    receiver: OtlpReceiver, gateway: FakeGatewayProcess, helpdesk: McpToolServerProcess, tmp_path: Path
) -> None:
    server = start_reasoning_server(tmp_path / "server", receiver, gateway, helpdesk, content=True)
    try:
        spans = reasoning_trace(server, gateway, receiver)
    finally:
        assert server.stop() == 0, server.log()
    models = [span for span in spans if span["name"] == "model call"]
    assert all("Help customer Ada." in span["attributes"]["content.prompt"] for span in models)
    assert any("Done." in span["attributes"]["content.answer"] for span in models)
    tool = one(spans, name="tool call")
    assert json.loads(tool["attributes"]["content.arguments"]) == {"id": "cust-zq"}
    assert "pro" in tool["attributes"]["content.result"]
