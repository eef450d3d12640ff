"""Request bodies the mappings produce, and response bodies written from each provider's API reference,
for providers with fixed hosts tests cannot reach (the Gemini API, Vertex AI) and for error bodies."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from auto_runtime.aws.credentials import StaticAwsCredentials
from auto_runtime.aws.signing import AwsCredentials
from auto_runtime.models import (
    AssistantTurn,
    CallSettings,
    JsonOutput,
    ModelCallFailure,
    ModelRequest,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultsTurn,
    UserTurn,
)
from auto_runtime.models.failures import failure_of_response
from auto_runtime.models.protocols.anthropic_messages import AnthropicMessages
from auto_runtime.models.protocols.gemini import Gemini
from auto_runtime.models.provider_words import Scrubber
from auto_runtime.models.providers import CloudCredentials, configured_providers
from tests.models.conftest import settings_of

TOOL = ToolDefinition("crm__lookup", "Finds a customer", {"type": "object", "properties": {"id": {"type": "string"}}})
SCRUB = Scrubber.of([])


class NoToken:
    async def access_token(self) -> str | None:
        return None


def tool_conversation() -> ModelRequest:
    return ModelRequest(
        turns=(
            UserTurn("Who is c-1?"),
            AssistantTurn(None, (ToolCall("call-1", "crm__lookup", '{"id":"c-1"}'),)),
            ToolResultsTurn((ToolResult("call-1", "crm__lookup", "no such customer", is_error=True),)),
            UserTurn("Answer now."),
        ),
        instructions="Be brief.",
        tools=(TOOL,),
        settings=CallSettings(max_output_tokens=256, temperature=0.3, top_p=0.8, seed=4, stop_sequences=("X",)),
        provider_options={"google": {"thinkingConfig": {"thinkingBudget": 0}, "safetySettings": []}},
    )


def test_gemini_request_body() -> None:
    body, warnings = Gemini("google").body("gemini-2.5-flash", tool_conversation())
    assert warnings == ()
    assert body == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Who is c-1?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "crm__lookup", "args": {"id": "c-1"}}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "crm__lookup", "response": {"error": "no such customer"}}},
                    {"text": "Answer now."},
                ],
            },
        ],
        "generationConfig": {
            "maxOutputTokens": 256,
            "temperature": 0.3,
            "topP": 0.8,
            "seed": 4,
            "stopSequences": ["X"],
            "thinkingConfig": {"thinkingBudget": 0},
        },
        "safetySettings": [],
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "crm__lookup", "description": "Finds a customer", "parameters": TOOL.parameters}
                ]
            }
        ],
    }


def test_gemini_json_output_and_dropped_effort() -> None:
    schema = {"type": "object"}
    request = ModelRequest(turns=(UserTurn("x"),), output=JsonOutput(schema), settings=CallSettings(reasoning="high"))
    body, warnings = Gemini("vertex").body("gemini-2.5-pro", request)
    assert body["generationConfig"] == {
        "maxOutputTokens": 1024,
        "responseMimeType": "application/json",
        "responseJsonSchema": schema,
    }
    assert [w.as_record()["feature"] for w in warnings] == ["config.reasoning"]


GEMINI_ANSWER = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "thinking...", "thought": True},
                    {"text": "Looking it up."},
                    {"functionCall": {"name": "crm__lookup", "args": {"id": "c-1"}}},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 120,
        "candidatesTokenCount": 20,
        "totalTokenCount": 150,
        "cachedContentTokenCount": 100,
        "thoughtsTokenCount": 10,
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "resp-gem-1",
}


def test_gemini_answer_with_a_function_call_and_cached_tokens() -> None:
    answer = Gemini("google").answer(json.dumps(GEMINI_ANSWER).encode(), SCRUB, tool_conversation())
    assert answer.text == "Looking it up."
    assert answer.tool_calls == (ToolCall("call-1", "crm__lookup", '{"id":"c-1"}'),)
    assert (answer.finish_reason, answer.raw_finish_reason) == ("tool_calls", "STOP")
    assert (answer.response_id, answer.answered_model) == ("resp-gem-1", "gemini-2.5-flash")
    assert answer.usage.as_record() == {
        "input": {"total": 120, "uncached": 20, "cache_read": 100, "cache_write": None},
        "output": {"total": 30, "text": 20, "reasoning": 10},
        "total": 150,
    }


@pytest.mark.parametrize("reason", ["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST"])
def test_gemini_safety_finishes_are_content_refusals(reason: str) -> None:
    blocked = {**GEMINI_ANSWER, "candidates": [{"content": {"parts": []}, "finishReason": reason}]}
    with pytest.raises(ModelCallFailure) as raised:
        Gemini("google").answer(json.dumps(blocked).encode(), SCRUB, tool_conversation())
    assert raised.value.kind == "content_refused"
    assert raised.value.usage is not None and raised.value.usage.input_total == 120


def test_gemini_blocked_prompt_is_a_content_refusal() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 8}}
    with pytest.raises(ModelCallFailure) as raised:
        Gemini("google").answer(json.dumps(blocked).encode(), SCRUB, tool_conversation())
    assert raised.value.kind == "content_refused"


def test_gemini_max_tokens_is_length() -> None:
    cut = {**GEMINI_ANSWER, "candidates": [{"content": {"parts": [{"text": "partial"}]}, "finishReason": "MAX_TOKENS"}]}
    answer = Gemini("google").answer(json.dumps(cut).encode(), SCRUB, tool_conversation())
    assert (answer.text, answer.finish_reason) == ("partial", "length")


def test_vertex_anthropic_body_and_google_vertex_thinking() -> None:
    request = ModelRequest(
        turns=(UserTurn("Hi"),),
        provider_options={
            "googleVertex": {"thinking": {"type": "enabled", "budgetTokens": 1024, "display": "omitted"}}
        },
    )
    body, _ = AnthropicMessages("vertex-anthropic", flavor="vertex").body("claude-x@20250101", request)
    assert body == {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hi"}],
        "thinking": {"type": "enabled", "budget_tokens": 1024, "display": "omitted"},
    }


def test_anthropic_refusal_and_max_tokens() -> None:
    request = ModelRequest(turns=(UserTurn("Hi"),))
    refusal = {"id": "m", "content": [], "stop_reason": "refusal", "usage": {"input_tokens": 5, "output_tokens": 0}}
    with pytest.raises(ModelCallFailure) as raised:
        AnthropicMessages("anthropic").answer(json.dumps(refusal).encode(), SCRUB, request)
    assert raised.value.kind == "content_refused"
    cut = {"id": "m", "content": [{"type": "text", "text": "par"}], "stop_reason": "max_tokens", "usage": {}}
    answer = AnthropicMessages("anthropic").answer(json.dumps(cut).encode(), SCRUB, request)
    assert (answer.finish_reason, answer.text) == ("length", "par")


async def test_endpoint_shapes_of_fixed_hosts(tmp_path: Path) -> None:
    environ = {
        "GOOGLE_GENERATIVE_AI_API_KEY": "google-key-123456",
        "GOOGLE_VERTEX_PROJECT": "my-project",
        "GOOGLE_VERTEX_LOCATION": "europe-west4",
        "AWS_REGION": "eu-central-1",
        "AZURE_RESOURCE_NAME": "contoso",
        "AZURE_API_KEY": "azure-key-123456",
        "AZURE_API_VERSION": "preview",
        "OPENAI_API_KEY": "openai-key-123456",
        "ANTHROPIC_API_KEY": "anthropic-key-123456",
    }
    cloud = CloudCredentials(aws=StaticAwsCredentials(AwsCredentials("a", "b")), google=NoToken())
    providers = configured_providers(settings_of(tmp_path, environ), cloud, {})
    assert providers["google"].url_for("gemini-2.5-flash") == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert providers["vertex"].url_for("gemini-2.5-pro") == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/europe-west4"
        "/publishers/google/models/gemini-2.5-pro:generateContent"
    )
    assert providers["vertex-anthropic"].url_for("claude-x@20250101") == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/europe-west4"
        "/publishers/anthropic/models/claude-x%4020250101:rawPredict"
    )
    assert providers["bedrock"].url_for("anthropic.claude-x:0") == (
        "https://bedrock-runtime.eu-central-1.amazonaws.com/model/anthropic.claude-x%3A0/converse"
    )
    assert providers["bedrock-anthropic"].url_for("anthropic.claude-x") == (
        "https://bedrock-runtime.eu-central-1.amazonaws.com/model/anthropic.claude-x/invoke"
    )
    assert providers["azure"].url_for("dep") == "https://contoso.openai.azure.com/openai/v1/responses"
    assert providers["azure"].params == {"api-version": "preview"}
    assert providers["openai"].url_for("gpt-x") == "https://api.openai.com/v1/responses"
    assert providers["anthropic"].url_for("claude-x") == "https://api.anthropic.com/v1/messages"
    # Standard endpoints may show the provider's words; Bedrock's and Azure's too, addressed by region/resource.
    assert all(provider.expose_words for provider in providers.values())


async def test_vertex_without_application_default_credentials(tmp_path: Path) -> None:
    environ = {"GOOGLE_VERTEX_PROJECT": "p", "GOOGLE_VERTEX_LOCATION": "global"}
    cloud = CloudCredentials(aws=StaticAwsCredentials(None), google=NoToken())
    vertex = configured_providers(settings_of(tmp_path, environ), cloud, {})["vertex"]
    assert vertex.url_for("m").startswith("https://aiplatform.googleapis.com/v1/projects/p/locations/global/")
    assert vertex.auth is not None
    with pytest.raises(ModelCallFailure) as raised:
        await vertex.auth.apply(httpx.Request("POST", vertex.url_for("m")))
    assert raised.value.kind == "credentials_rejected"


ERROR_BODIES = [
    # Anthropic
    (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "provider_unavailable"),
    (
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"},
        },
        "request_refused",
    ),
    (
        401,
        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
        "credentials_rejected",
    ),
    # Gemini
    (
        400,
        {
            "error": {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
            }
        },
        "request_refused",
    ),
    (
        429,
        {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}},
        "rate_limited",
    ),
    (
        403,
        {"error": {"code": 403, "message": "Permission denied", "status": "PERMISSION_DENIED"}},
        "credentials_rejected",
    ),
    # OpenAI
    (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        "request_refused",
    ),
    (408, {"error": {"message": "timeout"}}, "provider_unavailable"),
    (409, {"error": {"message": "conflict"}}, "provider_unavailable"),
    (418, {"error": {"message": "teapot"}}, "request_refused"),
]


@pytest.mark.parametrize(("status", "document", "kind"), ERROR_BODIES)
def test_error_bodies_map_to_failures(status: int, document: dict[str, object], kind: str) -> None:
    failure = failure_of_response("p", status, {}, json.dumps(document).encode(), expose_words=True, scrub=SCRUB)
    assert failure.kind == kind
    if "too long" in json.dumps(document) or "context length" in json.dumps(document):
        assert failure.context_length


def test_shown_words_are_one_line_and_never_a_document() -> None:
    html = b"<html><body>502 Bad Gateway</body></html>"
    failure = failure_of_response("p", 502, {}, html, expose_words=True, scrub=SCRUB)
    assert failure.detail == "The provider p is unavailable (HTTP 502, bad gateway)"
    long_words = json.dumps({"error": {"message": "x" * 500 + "\nsecond"}}).encode()
    failure = failure_of_response("p", 400, {}, long_words, expose_words=True, scrub=SCRUB)
    assert failure.detail.endswith(": " + "x" * 300)
