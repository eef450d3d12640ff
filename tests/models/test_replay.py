"""What a provider needs back in the next step of a tool loop: thinking blocks and thought signatures."""

from __future__ import annotations

import json

from auto_runtime.models import (
    ModelRequest,
    ToolResult,
    ToolResultsTurn,
    UserTurn,
    assistant_turn,
)
from auto_runtime.models.protocols.anthropic_messages import AnthropicMessages
from auto_runtime.models.protocols.bedrock_converse import BedrockConverse
from auto_runtime.models.protocols.gemini import Gemini
from auto_runtime.models.protocols.openai_chat import OpenAIChat
from auto_runtime.models.provider_words import Scrubber

SCRUB = Scrubber.of([])
FIRST = ModelRequest(turns=(UserTurn("Who is c-1?"),))


def next_request(answer_turn: object) -> ModelRequest:
    return ModelRequest(
        turns=(
            UserTurn("Who is c-1?"),
            answer_turn,  # type: ignore[arg-type]
            ToolResultsTurn((ToolResult("call-a", "crm__lookup", "Ada"),)),
        )
    )


def test_anthropic_thinking_blocks_go_back_with_their_signatures() -> None:
    content = [
        {"type": "thinking", "thinking": "I should look c-1 up.", "signature": "sig-123"},
        {"type": "tool_use", "id": "call-a", "name": "crm__lookup", "input": {"id": "c-1"}},
    ]
    body = {"id": "m", "content": content, "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}
    protocol = AnthropicMessages("anthropic")
    answer = protocol.answer(json.dumps(body).encode(), SCRUB, FIRST)
    sent, _ = protocol.body("claude-x", next_request(assistant_turn(answer)))
    assert sent["messages"][1] == {"role": "assistant", "content": content}


def test_gemini_parts_go_back_with_their_thought_signatures() -> None:
    parts = [{"functionCall": {"name": "crm__lookup", "args": {"id": "c-1"}}, "thoughtSignature": "c2lnbmF0dXJl"}]
    body = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    protocol = Gemini("google")
    answer = protocol.answer(json.dumps(body).encode(), SCRUB, FIRST)
    sent, _ = protocol.body("gemini-3-pro", next_request(assistant_turn(answer)))
    assert sent["contents"][1] == {"role": "model", "parts": parts}


def test_bedrock_reasoning_content_goes_back() -> None:
    content = [
        {"reasoningContent": {"reasoningText": {"text": "Look it up.", "signature": "sig"}}},
        {"toolUse": {"toolUseId": "call-a", "name": "crm__lookup", "input": {"id": "c-1"}}},
    ]
    body = {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": "tool_use", "usage": {}}
    protocol = BedrockConverse()
    answer = protocol.answer(json.dumps(body).encode(), SCRUB, FIRST)
    assert answer.text is None
    sent, _ = protocol.body("anthropic.claude-x", next_request(assistant_turn(answer)))
    assert sent["messages"][1] == {"role": "assistant", "content": content}


def test_another_protocol_ignores_a_replay_it_cannot_read() -> None:
    parts = [{"functionCall": {"name": "crm__lookup", "args": {"id": "c-1"}, "id": "call-a"}}]
    body = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    answer = Gemini("google").answer(json.dumps(body).encode(), SCRUB, FIRST)
    sent, _ = OpenAIChat("gw").body("m", next_request(assistant_turn(answer)))
    assert sent["messages"][1]["tool_calls"][0]["id"] == "call-a"
