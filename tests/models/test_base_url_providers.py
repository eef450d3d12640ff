"""OpenAI Responses, OpenAI Chat Completions and Anthropic Messages with their base URLs pointed at the
fake gateway process (reasoning-format §5.6), so their mappings cross a real HTTP connection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from auto_runtime.models import (
    AssistantTurn,
    CallSettings,
    JsonOutput,
    ModelCallFailure,
    ModelDirectory,
    ModelRequest,
    RetryPolicy,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultsTurn,
    UserTurn,
)
from tests.fakes.gateway_process import FakeGatewayProcess
from tests.models.conftest import settings_of

KEY = "provider-test-key-abcdef"
TOOL = ToolDefinition("crm__lookup", "Finds a customer", {"type": "object", "properties": {"id": {"type": "string"}}})


async def opened(folder: Path, environ: dict[str, str]) -> AsyncIterator[ModelDirectory]:
    directory = ModelDirectory.from_settings(
        settings_of(folder, environ), environ=environ, retry=RetryPolicy(waits=(0.01, 0.01))
    )
    try:
        yield directory
    finally:
        await directory.aclose()


def conversation() -> tuple[UserTurn, AssistantTurn, ToolResultsTurn]:
    return (
        UserTurn("Who is c-1?"),
        AssistantTurn("Looking.", (ToolCall("call_9", "crm__lookup", '{"id":"c-1"}'),)),
        ToolResultsTurn((ToolResult("call_9", "crm__lookup", '{"name":"Ada"}'),)),
    )


async def test_openai_responses(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script(
        {
            "content": "Ada",
            "id": "resp_1",
            "usage": {
                "input_tokens": 40,
                "output_tokens": 12,
                "total_tokens": 52,
                "input_tokens_details": {"cached_tokens": 32},
                "output_tokens_details": {"reasoning_tokens": 8},
            },
        },
        {"content": None, "tool_calls": [{"id": "call_2", "name": "crm__lookup", "arguments": '{"id":"c-2"}'}]},
        {"content": "cut", "finish_reason": "length"},
    )
    environ = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": gateway.base_url}
    async for directory in opened(tmp_path, environ):
        resolved = directory.resolve(f"openai/{model}")
        settings = CallSettings(max_output_tokens=300, temperature=0.5, seed=3, reasoning="low")
        request = ModelRequest(
            turns=conversation(),
            instructions="Be brief.",
            tools=(TOOL,),
            settings=settings,
            provider_options={"openai": {"textVerbosity": "low"}},
        )
        answer = await directory.call(resolved, request)
        calling = await directory.call(resolved, request)
        cut = await directory.call(resolved, request)
    assert answer.text == "Ada"
    assert answer.response_id == "resp_1"
    assert answer.usage.as_record() == {
        "input": {"total": 40, "uncached": 8, "cache_read": 32, "cache_write": None},
        "output": {"total": 12, "text": 4, "reasoning": 8},
        "total": 52,
    }
    assert [w.feature for w in answer.warnings] == ["config.seed"]
    assert calling.finish_reason == "tool_calls"
    assert calling.tool_calls == (ToolCall("call_2", "crm__lookup", '{"id":"c-2"}'),)
    assert (cut.finish_reason, cut.raw_finish_reason) == ("length", "max_output_tokens")
    received = gateway.requests(model)[0]
    assert received["path"] == "/v1/responses"
    assert received["headers"]["authorization"] == f"Bearer {KEY}"
    assert received["body"] == {
        "model": model,
        "store": False,
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Who is c-1?"},
            {"role": "assistant", "content": "Looking."},
            {"type": "function_call", "call_id": "call_9", "name": "crm__lookup", "arguments": '{"id":"c-1"}'},
            {"type": "function_call_output", "call_id": "call_9", "output": '{"name":"Ada"}'},
        ],
        "max_output_tokens": 300,
        "temperature": 0.5,
        "reasoning": {"effort": "low"},
        "tools": [
            {
                "type": "function",
                "name": "crm__lookup",
                "description": "Finds a customer",
                "parameters": TOOL.parameters,
                "strict": False,
            }
        ],
        "text": {"verbosity": "low"},
    }


async def test_openai_chat_completions_when_asked(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": '{"a":1}'})
    environ = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": gateway.base_url, "OPENAI_API": "chat_completions"}
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    async for directory in opened(tmp_path, environ):
        request = ModelRequest(turns=(UserTurn("Give a"),), output=JsonOutput(schema))
        await directory.call(directory.resolve(f"openai/{model}"), request)
    body = gateway.requests(model)[0]["body"]
    assert body["max_completion_tokens"] == 1024
    assert "max_tokens" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


async def test_anthropic_messages(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script(
        {
            "content": None,
            "tool_calls": [{"id": "json_1", "name": "json", "arguments": '{"name":"Ada"}'}],
            "id": "msg_1",
            "usage": {
                "input_tokens": 10,
                "cache_read_input_tokens": 200,
                "cache_creation_input_tokens": 5,
                "output_tokens": 7,
            },
        },
        {
            "status": 529,
            "error": {"type": "overloaded_error", "message": "Overloaded"},
            "headers": {"retry-after": "0"},
        },
        {"content": "Ada it is", "finish_reason": "end_turn"},
    )
    environ = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": gateway.base_url}
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    async for directory in opened(tmp_path, environ):
        resolved = directory.resolve(f"anthropic/{model}")
        as_json = await directory.call(
            resolved,
            ModelRequest(turns=conversation(), instructions="Be brief.", tools=(TOOL,), output=JsonOutput(schema)),
        )
        as_text = await directory.call(resolved, ModelRequest(turns=(UserTurn("Hi"),), settings=CallSettings(seed=1)))
    assert as_json.text == '{"name":"Ada"}'
    assert as_json.tool_calls == ()
    assert as_json.finish_reason == "stop"
    assert as_json.usage.as_record() == {
        "input": {"total": 215, "uncached": 10, "cache_read": 200, "cache_write": 5},
        "output": {"total": 7, "text": None, "reasoning": None},
        "total": 222,
    }
    assert as_text.text == "Ada it is"
    assert [w.feature for w in as_text.warnings] == ["config.seed"]
    first, retried, _ = gateway.requests(model)
    assert first["path"] == "/v1/messages"
    assert first["headers"]["x-api-key"] == KEY
    assert first["headers"]["anthropic-version"] == "2023-06-01"
    assert first["body"]["tool_choice"] == {"type": "any"}
    assert first["body"]["system"] == "Be brief."
    assert first["body"]["messages"] == [
        {"role": "user", "content": "Who is c-1?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "call_9", "name": "crm__lookup", "input": {"id": "c-1"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_9", "content": '{"name":"Ada"}', "is_error": False}
            ],
        },
    ]
    assert [tool["name"] for tool in first["body"]["tools"]] == ["crm__lookup", "json"]
    assert retried["body"] == {"model": model, "max_tokens": 1024, "messages": [{"role": "user", "content": "Hi"}]}


async def test_anthropic_auth_token_is_a_bearer(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"status": 401, "error": {"type": "authentication_error", "message": "bad token"}})
    environ = {"ANTHROPIC_AUTH_TOKEN": KEY, "ANTHROPIC_BASE_URL": gateway.base_url}
    async for directory in opened(tmp_path, environ):
        with pytest.raises(ModelCallFailure) as raised:
            await directory.call(directory.resolve(f"anthropic/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    assert raised.value.kind == "credentials_rejected"
    # A base-URL override hides the provider's own words (§4.7).
    assert "bad token" not in raised.value.detail
    assert gateway.requests(model)[0]["headers"]["authorization"] == f"Bearer {KEY}"
