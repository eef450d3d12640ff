"""Bedrock (Converse and Anthropic InvokeModel) and Azure with their endpoints pointed at the fake gateway,
so URL shape, signing and the mappings cross a real HTTP connection. The real clouds are not reachable
from tests; Vertex and the Gemini API have fixed hosts and are covered in test_recorded_bodies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from auto_runtime.aws.signing import AwsCredentials, sigv4_headers
from auto_runtime.models import (
    CallSettings,
    JsonOutput,
    ModelCallFailure,
    ModelDirectory,
    ModelRequest,
    RetryPolicy,
    ToolCall,
    ToolDefinition,
    UserTurn,
)
from tests.fakes.gateway_process import FakeGatewayProcess
from tests.models.conftest import settings_of

TOOL = ToolDefinition("crm__lookup", "Finds a customer", {"type": "object"})
AWS_KEYS = {"AWS_ACCESS_KEY_ID": "AKIDTESTKEY", "AWS_SECRET_ACCESS_KEY": "test-secret-access-key"}


async def opened(folder: Path, environ: dict[str, str]) -> AsyncIterator[ModelDirectory]:
    directory = ModelDirectory.from_settings(
        settings_of(folder, environ), environ=environ, retry=RetryPolicy(waits=(0.01, 0.01))
    )
    try:
        yield directory
    finally:
        await directory.aclose()


CONVERSE_ANSWER = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "crm__lookup", "input": {"id": "c-1"}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {
        "inputTokens": 30,
        "outputTokens": 12,
        "totalTokens": 142,
        "cacheReadInputTokens": 100,
        "cacheWriteInputTokens": 0,
    },
    "metrics": {"latencyMs": 412},
}


async def test_bedrock_converse_signed_with_sigv4(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"body": CONVERSE_ANSWER}, prefix="anthropic.claude-x")
    environ = {"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": gateway.origin, **AWS_KEYS}
    async for directory in opened(tmp_path, environ):
        request = ModelRequest(
            turns=(UserTurn("Who is c-1?"),),
            instructions="Be brief.",
            tools=(TOOL,),
            settings=CallSettings(max_output_tokens=200, temperature=0.1, stop_sequences=("END",)),
            provider_options={"amazonBedrock": {"reasoningConfig": {"type": "enabled", "budgetTokens": 1024}}},
        )
        answer = await directory.call(directory.resolve(f"bedrock/{model}"), request)
    assert answer.text == "Checking."
    assert answer.tool_calls == (ToolCall("tooluse_1", "crm__lookup", '{"id":"c-1"}'),)
    assert answer.finish_reason == "tool_calls"
    assert answer.usage.as_record() == {
        "input": {"total": 130, "uncached": 30, "cache_read": 100, "cache_write": 0},
        "output": {"total": 12, "text": None, "reasoning": None},
        "total": 142,
    }
    [received] = gateway.requests(model)
    assert received["path"] == f"/model/{model}/converse"
    assert received["body"] == {
        "messages": [{"role": "user", "content": [{"text": "Who is c-1?"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 200, "temperature": 0.1, "stopSequences": ["END"]},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "crm__lookup",
                        "description": "Finds a customer",
                        "inputSchema": {"json": {"type": "object"}},
                    }
                }
            ]
        },
        "additionalModelRequestFields": {"reasoningConfig": {"type": "enabled", "budgetTokens": 1024}},
    }
    headers = received["headers"]
    authorization = headers["authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDTESTKEY/")
    assert "/eu-west-1/bedrock/aws4_request" in authorization
    # The signature is the one the same inputs give, host and body included.
    url = httpx.URL(f"{gateway.origin}{received['path']}")
    expected = sigv4_headers(
        method="POST",
        url=url,
        headers={"content-type": headers["content-type"]},
        body=json.dumps(received["body"], separators=(",", ":")).encode(),
        credentials=AwsCredentials("AKIDTESTKEY", "test-secret-access-key"),
        region="eu-west-1",
        service="bedrock",
        moment=datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC),
    )
    assert expected["Authorization"] == authorization


async def test_bedrock_with_a_bearer_token_and_an_arn(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    arn = "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-x"
    gateway.script(arn, {"body": {**CONVERSE_ANSWER, "stopReason": "end_turn"}})
    environ = {
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": gateway.origin,
        "AWS_BEARER_TOKEN_BEDROCK": "bedrock-bearer-token-123",
    }
    async for directory in opened(tmp_path, environ):
        answer = await directory.call(directory.resolve(f"bedrock/{arn}"), ModelRequest(turns=(UserTurn("Hi"),)))
    assert answer.finish_reason == "stop"
    [received] = gateway.requests(arn)
    assert received["headers"]["authorization"] == "Bearer bedrock-bearer-token-123"
    assert received["path"] == f"/model/{arn}/converse"


async def test_bedrock_without_credentials_refuses_before_sending(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"body": CONVERSE_ANSWER})
    environ = {
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": gateway.origin,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    async for directory in opened(tmp_path, environ):
        with pytest.raises(ModelCallFailure) as raised:
            await directory.call(directory.resolve(f"bedrock/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    assert raised.value.kind == "credentials_rejected"
    assert gateway.requests(model) == []


async def test_bedrock_errors_in_its_own_shape(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script(
        {
            "status": 429,
            "body": {"message": "Too many requests, please wait before trying again."},
            "headers": {"x-amzn-ErrorType": "ThrottlingException"},
        },
        {"status": 400, "body": {"message": "The provided model identifier is invalid."}},
    )
    environ = {"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": gateway.origin, **AWS_KEYS}
    async for directory in opened(tmp_path, environ):
        with pytest.raises(ModelCallFailure) as raised:
            await directory.call(directory.resolve(f"bedrock/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    assert raised.value.kind == "request_refused"
    assert raised.value.status == 400
    assert len(gateway.requests(model)) == 2


async def test_bedrock_anthropic_invokes_with_the_anthropic_body(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    answer_body = {
        "id": "msg_bdrk_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "json", "input": {"queue": "billing"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 20, "output_tokens": 9},
    }
    model = gateway.new_script({"body": answer_body}, prefix="anthropic.claude")
    environ = {"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": gateway.origin, **AWS_KEYS}
    schema = {"type": "object", "properties": {"queue": {"type": "string"}}}
    async for directory in opened(tmp_path, environ):
        request = ModelRequest(
            turns=(UserTurn("Sort"),),
            output=JsonOutput(schema),
            provider_options={"bedrock": {"reasoningConfig": {"type": "enabled", "budgetTokens": 2048}}},
        )
        answer = await directory.call(directory.resolve(f"bedrock-anthropic/{model}"), request)
    assert answer.text == '{"queue":"billing"}'
    assert answer.finish_reason == "stop"
    [received] = gateway.requests(model)
    assert received["path"] == f"/model/{quote(model, safe='')}/invoke"
    body = received["body"]
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["tool_choice"] == {"type": "auto"}  # thinking refuses a forced tool


async def test_azure_responses_with_a_base_url(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    deployment = gateway.new_script(
        {
            "body": {
                "id": "resp_az_1",
                "object": "response",
                "status": "completed",
                "model": "gpt-5-mini-2025-08-07",
                "output": [
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "Hello", "annotations": []}],
                    },
                ],
                "usage": {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14},
            }
        },
        {
            "status": 400,
            "body": {
                "error": {
                    "message": "The response was filtered due to the prompt triggering content management policy.",
                    "type": None,
                    "param": "prompt",
                    "code": "content_filter",
                    "status": 400,
                    "innererror": {"code": "ResponsibleAIPolicyViolation"},
                }
            },
        },
        prefix="my-deployment",
    )
    environ = {"AZURE_BASE_URL": f"{gateway.origin}/openai", "AZURE_API_KEY": "azure-key-0123456789"}
    async for directory in opened(tmp_path, environ):
        resolved = directory.resolve(f"azure/{deployment}")
        options = {"azure": {"textVerbosity": "high"}, "openai": {"textVerbosity": "low"}}
        answer = await directory.call(resolved, ModelRequest(turns=(UserTurn("Hi"),), provider_options=options))
        with pytest.raises(ModelCallFailure) as raised:
            await directory.call(resolved, ModelRequest(turns=(UserTurn("Hi"),)))
    assert (answer.text, answer.answered_model, answer.usage.total) == ("Hello", "gpt-5-mini-2025-08-07", 14)
    assert raised.value.kind == "content_refused"
    first = gateway.requests(deployment)[0]
    assert first["path"] == "/openai/v1/responses"
    assert first["query"] == {"api-version": "v1"}
    assert first["headers"]["api-key"] == "azure-key-0123456789"
    assert first["body"]["model"] == deployment
    assert first["body"]["text"] == {"verbosity": "high"}
