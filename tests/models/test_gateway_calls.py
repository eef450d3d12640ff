"""Model calls through a gateway entry, against the fake gateway process (under Trio, as the server runs)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sniffio

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
from tests.models.conftest import FAKE_KEY, gateway_environ, settings_of

QUICK_RETRIES = RetryPolicy(waits=(0.01, 0.01))
OSLO = '{"city":"Oslo"}'
WEATHER_TOOL = ToolDefinition(
    name="weather__forecast",
    description="The forecast of a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def open_directory(folder: Path, environ: dict[str, str]) -> AsyncIterator[ModelDirectory]:
    directory = ModelDirectory.from_settings(settings_of(folder, environ), environ=environ, retry=QUICK_RETRIES)
    try:
        yield directory
    finally:
        await directory.aclose()


@pytest.fixture
async def directory(tmp_path: Path, gateway: FakeGatewayProcess) -> AsyncIterator[ModelDirectory]:
    environ = gateway_environ(gateway, headers={"x-team": "blue"}, query_params={"tenant": "t1"})
    async for opened in open_directory(tmp_path, environ):
        yield opened


def ask(text: str = "Sort this ticket", **fields: Any) -> ModelRequest:
    return ModelRequest(turns=(UserTurn(text),), instructions="You triage tickets.", **fields)


async def test_a_text_answer_and_the_request_the_gateway_received(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    model = gateway.new_script(
        {
            "content": "billing",
            "id": "chatcmpl-1",
            "model": "served-model",
            "usage": {
                "prompt_tokens": 120,
                "completion_tokens": 30,
                "total_tokens": 150,
                "prompt_tokens_details": {"cached_tokens": 100},
                "completion_tokens_details": {"reasoning_tokens": 10},
            },
        }
    )
    assert sniffio.current_async_library() == "trio"  # the server's event loop, not asyncio
    resolved = directory.resolve(f"fake/{model}")
    settings = CallSettings(max_output_tokens=600, temperature=0.2, top_p=0.9, seed=7, stop_sequences=("END",))
    answer = await directory.call(resolved, ask(settings=settings), run_id="run-1")

    assert answer.text == "billing"
    assert answer.finish_reason == "stop"
    assert answer.raw_finish_reason == "stop"
    assert answer.response_id == "chatcmpl-1"
    assert answer.answered_model == "served-model"
    assert answer.usage.as_record() == {
        "input": {"total": 120, "uncached": 20, "cache_read": 100, "cache_write": None},
        "output": {"total": 30, "text": 20, "reasoning": 10},
        "total": 150,
    }
    [received] = gateway.requests(model)
    assert received["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    assert received["headers"]["x-team"] == "blue"
    assert received["query"] == {"tenant": "t1"}
    assert "run-1" not in json.dumps(received)
    assert received["body"] == {
        "model": model,
        "messages": [
            {"role": "system", "content": "You triage tickets."},
            {"role": "user", "content": "Sort this ticket"},
        ],
        "max_tokens": 600,
        "temperature": 0.2,
        "top_p": 0.9,
        "seed": 7,
        "stop": ["END"],
    }


async def test_tool_calls_then_their_results_in_the_next_step(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    model = gateway.new_script(
        {"content": None, "tool_calls": [{"id": "call_1", "name": "weather__forecast", "arguments": OSLO}]},
        {"content": "Rain in Oslo", "usage": {"prompt_tokens": 50, "completion_tokens": 4}},
    )
    resolved = directory.resolve(f"fake/{model}")
    first = await directory.call(resolved, ask("Weather?", tools=(WEATHER_TOOL,)))
    assert first.finish_reason == "tool_calls"
    assert first.text is None
    assert first.tool_calls == (ToolCall("call_1", "weather__forecast", '{"city":"Oslo"}'),)

    turns = (
        UserTurn("Weather?"),
        AssistantTurn(first.text, first.tool_calls),
        ToolResultsTurn((ToolResult("call_1", "weather__forecast", "rain"),)),
    )
    second = await directory.call(resolved, ModelRequest(turns=turns, tools=(WEATHER_TOOL,)))
    assert second.text == "Rain in Oslo"
    assert second.usage.input_total == 50
    assert second.usage.input_cache_read is None  # not reported, so unknown
    assert second.usage.total is None

    first_body, second_body = (r["body"] for r in gateway.requests(model))
    assert first_body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather__forecast",
                "description": "The forecast of a city",
                "parameters": WEATHER_TOOL.parameters,
            },
        }
    ]
    assert second_body["messages"] == [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather__forecast", "arguments": OSLO}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
    ]


async def test_json_output_asks_json_object_unless_the_entry_has_structured_outputs(
    tmp_path: Path, directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    schema = {"type": "object", "properties": {"queue": {"type": "string"}}, "required": ["queue"]}
    model = gateway.new_script({"content": '{"queue":"billing"}'})
    answer = await directory.call(directory.resolve(f"fake/{model}"), ask(output=JsonOutput(schema)))
    assert answer.text == '{"queue":"billing"}'
    assert gateway.requests(model)[0]["body"]["response_format"] == {"type": "json_object"}

    strict = gateway.new_script({"content": '{"queue":"outage"}'})
    environ = gateway_environ(gateway, structured_outputs=True)
    async for structured in open_directory(tmp_path, environ):
        await structured.call(structured.resolve(f"fake/{strict}"), ask(output=JsonOutput(schema, name="triage")))
    assert gateway.requests(strict)[0]["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "triage", "schema": schema, "strict": True},
    }


async def test_allowed_gateway_options_become_top_level_fields(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": "ok"})
    environ = gateway_environ(gateway, allowed_provider_options=["transforms"])
    async for directory in open_directory(tmp_path, environ):
        options = {"fake": {"transforms": ["middle-out"]}}
        directory.check_provider_options(options)
        await directory.call(directory.resolve(f"fake/{model}"), ask(provider_options=options))
    assert gateway.requests(model)[0]["body"]["transforms"] == ["middle-out"]


async def test_a_rate_limit_is_retried_after_the_wait_the_gateway_asks(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    model = gateway.new_script(
        {"status": 429, "error": {"message": "slow down"}, "headers": {"retry-after-ms": "20"}},
        {"content": "done"},
    )
    answer = await directory.call(directory.resolve(f"fake/{model}"), ask())
    assert answer.text == "done"
    assert len(gateway.requests(model)) == 2


async def test_a_rate_limit_that_persists_says_when_to_try_again(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    limited = {"status": 429, "error": {"message": "slow down"}, "headers": {"retry-after": "0"}}
    model = gateway.new_script(limited, limited, {**limited, "headers": {"retry-after": "30"}})
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{model}"), ask())
    assert raised.value.kind == "rate_limited"
    assert raised.value.retry_after_seconds == 30
    assert "try again in 30 seconds" in raised.value.detail
    assert len(gateway.requests(model)) == 3


async def test_server_errors_are_tried_three_times_then_unavailable(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    model = gateway.new_script(*({"status": status, "error": {"message": "boom"}} for status in (500, 529, 503)))
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{model}"), ask())
    assert raised.value.kind == "provider_unavailable"
    assert raised.value.status == 503
    assert len(gateway.requests(model)) == 3


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (400, None, "request_refused"),
        (404, "model_not_found", "request_refused"),
        (413, None, "request_refused"),
        (422, None, "request_refused"),
        (401, None, "credentials_rejected"),
        (403, None, "credentials_rejected"),
        (400, "content_filter", "content_refused"),
        (400, "content_policy_violation", "content_refused"),
    ],
)
async def test_client_errors_are_never_retried(
    directory: ModelDirectory, gateway: FakeGatewayProcess, status: int, code: str | None, kind: str
) -> None:
    model = gateway.new_script({"status": status, "error": {"message": "no", "code": code}}, {"content": "unused"})
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{model}"), ask())
    assert raised.value.kind == kind
    assert raised.value.status == status
    assert len(gateway.requests(model)) == 1


async def test_provider_words_are_hidden_unless_the_entry_exposes_them(
    tmp_path: Path, directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    words = f"Model too busy for Sort this ticket with key {FAKE_KEY}\nsecond line"
    hidden = gateway.new_script({"status": 400, "error": {"message": words}})
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{hidden}"), ask())
    assert raised.value.detail == "The provider fake refused the request (HTTP 400, request invalid)"
    assert raised.value.logged is not None and FAKE_KEY not in raised.value.logged

    shown = gateway.new_script({"status": 400, "error": {"message": words}})
    async for exposing in open_directory(tmp_path, gateway_environ(gateway, expose_provider_messages=True)):
        with pytest.raises(ModelCallFailure) as raised:
            await exposing.call(exposing.resolve(f"fake/{shown}"), ask())
    assert raised.value.detail == (
        "The provider fake refused the request (HTTP 400, request invalid): "
        "Model too busy for [prompt] with key [redacted]"
    )


async def test_context_length_words_are_flagged(directory: ModelDirectory, gateway: FakeGatewayProcess) -> None:
    message = "This model's maximum context length is 8192 tokens."
    model = gateway.new_script({"status": 400, "error": {"message": message, "code": "context_length_exceeded"}})
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{model}"), ask())
    assert raised.value.kind == "request_refused"
    assert raised.value.context_length


async def test_an_unreadable_answer_is_unavailable_and_not_retried(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    model = gateway.new_script({"status": 200, "raw": "<html>oops</html>"}, {"content": "unused"})
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{model}"), ask())
    assert raised.value.kind == "provider_unavailable"
    assert len(gateway.requests(model)) == 1


async def test_a_content_filter_finish_is_a_refusal_with_usage(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    model = gateway.new_script(
        {"content": None, "finish_reason": "content_filter", "usage": {"prompt_tokens": 9, "completion_tokens": 0}}
    )
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{model}"), ask())
    assert raised.value.kind == "content_refused"
    assert raised.value.usage is not None and raised.value.usage.input_total == 9


async def test_finish_reasons_length_and_other(directory: ModelDirectory, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": "cut", "finish_reason": "length"}, {"content": "x", "finish_reason": "eos"})
    resolved = directory.resolve(f"fake/{model}")
    cut = await directory.call(resolved, ask())
    other = await directory.call(resolved, ask())
    assert (cut.finish_reason, cut.raw_finish_reason) == ("length", "length")
    assert (other.finish_reason, other.raw_finish_reason) == ("other", "eos")


async def test_the_deadline_ends_a_call_that_does_not_answer(
    directory: ModelDirectory, gateway: FakeGatewayProcess
) -> None:
    model = gateway.new_script({"content": "late", "delay_seconds": 30})
    with pytest.raises(ModelCallFailure) as raised:
        await directory.call(directory.resolve(f"fake/{model}"), ask(), deadline_seconds=0.3)
    assert raised.value.kind == "timed_out"


async def test_a_gateway_that_cannot_be_reached_is_unavailable(tmp_path: Path) -> None:
    from tests.e2e.server_process import free_port

    environ = {"MODEL_GATEWAYS": json.dumps([{"name": "gone", "base_url": f"http://127.0.0.1:{free_port()}/v1"}])}
    async for directory in open_directory(tmp_path, environ):
        with pytest.raises(ModelCallFailure) as raised:
            await directory.call(directory.resolve("gone/model"), ask())
    assert raised.value.kind == "provider_unavailable"
    assert raised.value.status is None


async def test_an_alias_reaches_the_gateway_with_the_rest_of_the_reference(
    tmp_path: Path, gateway: FakeGatewayProcess
) -> None:
    name = gateway.new_script({"content": "via alias"}, prefix="anthropic/claude")
    environ = {**gateway_environ(gateway), "MODEL_ALIASES": json.dumps({"anthropic/*": "fake/anthropic/*"})}
    async for directory in open_directory(tmp_path, environ):
        resolved = directory.resolve(name)  # "anthropic/claude-<hex>"
        assert (resolved.provider, resolved.model_id, resolved.alias) == ("fake", name, "anthropic/*")
        assert resolved.resolved == f"fake/{name}"
        answer = await directory.call(resolved, ask())
    assert answer.text == "via alias"
    assert gateway.requests(name)[0]["body"]["model"] == name
