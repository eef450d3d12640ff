"""The reasoning tool loop through one `ToolServerSet` serving an `mcp`, a `stdio` and an `openapi` server: the
real run service on a real ledger, the fake model gateway, and the three fakes, all real processes."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from auto_runtime.functions.reasoning import ReasoningType
from auto_runtime.functions.registry import function_types
from auto_runtime.ledger import Ledger, PlaybookScope, open_ledger
from auto_runtime.models import ModelDirectory
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.runs.facts import run_stream
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.settings import load_settings
from auto_runtime.tools.tool_server_set import ToolServerSet
from tests.fakes.gateway_process import (
    FakeGatewayProcess,
    HttpFakeProcess,
    McpToolServerProcess,
    start_fake_gateway,
    start_mcp_tool_server,
)
from tests.fakes.openapi_service import KEY

SCOPE = PlaybookScope("acme", "pb-tools")
STDIO_FAKE = Path(__file__).resolve().parents[1] / "fakes" / "mcp_stdio_server.py"
SOURCE = """---
model: fake/{model}
tools: [helpdesk/get_customer, notes/echo, billing/getInvoice]
---
Help customer {{{{ input.name }}}}.
"""


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


@pytest.fixture
async def runs(
    tmp_path: Path, gateway: FakeGatewayProcess, helpdesk: McpToolServerProcess, openapi_service: HttpFakeProcess
) -> AsyncIterator[tuple[Ledger, RunService]]:
    entry = {"name": "fake", "base_url": gateway.base_url, "api_key_env": "FAKE_GATEWAY_KEY"}
    servers = {
        "helpdesk": {"url": helpdesk.url, "org": "acme"},
        "notes": {"command": sys.executable, "args": [str(STDIO_FAKE)], "org": "acme"},
        "billing": {
            "document": f"{openapi_service.origin}/openapi.json",
            "security": {"apiKeyQuery": "${BILLING_KEY}"},
            "org": "acme",
        },
    }
    environ = {
        "HOST": "127.0.0.1",
        "MODEL_GATEWAYS": json.dumps([entry]),
        "FAKE_GATEWAY_KEY": "fake-gateway-key-0123456789",
        "TOOL_SERVERS": json.dumps(servers),
        "BILLING_KEY": KEY,
    }
    loaded = load_settings(environ, tmp_path, mode="image")
    assert KEY in loaded.secret_values
    tools = ToolServerSet.from_settings(loaded, tmp_path)
    models = ModelDirectory.from_settings(loaded.settings, secrets=loaded.secret_values, environ=environ)
    async with (
        open_ledger(ledger_file=tmp_path / "ledger.db", projections=RUNTIME_PROJECTIONS) as ledger,
        trio.open_nursery() as nursery,
    ):
        await nursery.start(tools.run)
        types = function_types(ReasoningType(models, tools, 2_000_000))
        definitions = DefinitionRegistry(ledger, types)
        try:
            async with definitions.actors.serving():
                yield ledger, RunService(ledger, definitions, types)
        finally:
            await tools.aclose()
            await models.aclose()


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


@pytest.mark.slow(seconds=6)
async def test_one_run_calls_a_tool_of_each_kind_and_answers(
    runs: tuple[Ledger, RunService], gateway: FakeGatewayProcess
) -> None:
    ledger, service = runs
    model = gateway.new_script(
        {
            "tool_calls": [
                _call("call-1", "helpdesk__get_customer", {"id": "c-7"}),
                _call("call-2", "notes__echo", {"text": "a note"}),
                _call("call-3", "billing__getInvoice", {"id": "inv-3"}),
            ],
            "usage": {"prompt_tokens": 50},
        },
        {"content": "Done.", "usage": {"prompt_tokens": 80, "completion_tokens": 2}},
    )
    await service.definitions.create(SCOPE, "reasoning", "helper", SOURCE.format(model=model), "tester")
    run_id = "0199a3c4-7d2e-7c1a-9b3f-2f1e0d9c8b70"
    answer = await service.run_definition(SCOPE, "reasoning", "helper", {"name": "Ada"}, run_id, "tester")
    assert answer["output"] == "Done."
    records = await ledger.read_stream(run_stream(SCOPE, run_id))
    answered = [record.data for record in records if record.type == "tool_call_answered"]
    assert [item["is_error"] for item in answered] == [False, False, False]
    started = [record.data for record in records if record.type == "tool_call_started"]
    assert [(item["server"], item["tool"]) for item in started] == [
        ("helpdesk", "get_customer"),
        ("notes", "echo"),
        ("billing", "getInvoice"),
    ]
    second = gateway.requests(model)[-1]
    messages = second["body"]["messages"] if "body" in second else second["messages"]
    results = {message["tool_call_id"]: message["content"] for message in messages if message["role"] == "tool"}
    assert results == {
        "call-1": '{"id": "c-7", "plan": "pro"}',
        "call-2": "a note",
        "call-3": '{"id":"inv-3"}',
    }
    assert KEY not in json.dumps([record.data for record in records])
