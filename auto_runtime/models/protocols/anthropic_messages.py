"""Anthropic Messages (reasoning-format §5.3): ``anthropic``, and the body ``bedrock-anthropic`` and
``vertex-anthropic`` send.

A JSON output is asked for with a tool named ``json`` whose input is the answer: forced when no other
tool is offered, required among the others (``tool_choice: any``) when tools are offered. The
answer's ``json`` call comes back as the answer's text, never as a tool call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from auto_runtime.models.answers import FinishReason, ModelAnswer, SettingWarning
from auto_runtime.models.conversation import AssistantTurn, ModelRequest, ToolResultsTurn, UserTurn
from auto_runtime.models.protocols.common import (
    JsonObject,
    MergedTurns,
    UnreadableAnswer,
    arguments_object,
    dropped,
    finish_of,
    read_answer,
    replay_of,
    text_or_none,
)
from auto_runtime.models.protocols.json_tool import JSON_TOOL, JSON_TOOL_DESCRIPTION, ToolUseAnswer
from auto_runtime.models.protocols.usage import cache_apart_usage
from auto_runtime.models.provider_options import anthropic_thinking, first_option
from auto_runtime.models.provider_words import Scrubber

REPLAY = "anthropic_messages"
ANTHROPIC_VERSION = "2023-06-01"
BODY_VERSIONS: Mapping[str, str] = {"bedrock": "bedrock-2023-05-31", "vertex": "vertex-2023-10-16"}

STOP_REASONS: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "other",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def anthropic_messages(request: ModelRequest) -> list[JsonObject]:
    """The turns as Anthropic messages, consecutive turns of one role merged into one message."""
    merged = MergedTurns("content", keep_empty=True)
    for turn in request.turns:
        if isinstance(turn, UserTurn):
            merged.add("user", [{"type": "text", "text": turn.text}])
        elif isinstance(turn, AssistantTurn) and turn.replay is not None and turn.replay.protocol == REPLAY:
            merged.add("assistant", [dict(block) for block in turn.replay.items])
        elif isinstance(turn, AssistantTurn):
            blocks: list[JsonObject] = [{"type": "text", "text": turn.text}] if turn.text else []
            blocks += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call.arguments)}
                for call in turn.tool_calls
            ]
            merged.add("assistant", blocks)
        elif isinstance(turn, ToolResultsTurn):
            merged.add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": result.call_id,
                        "content": result.content,
                        "is_error": result.is_error,
                    }
                    for result in turn.results
                ],
            )
    messages = merged.messages
    # A single text block is sent as plain content, as most examples write it.
    for message in messages:
        blocks = message["content"]
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            message["content"] = blocks[0]["text"]
    return messages


@dataclass(frozen=True)
class AnthropicMessages:
    """``flavor`` ``direct`` sends ``model``; ``bedrock`` and ``vertex`` put the model in the URL and an
    ``anthropic_version`` of their own in the body. ``options_provider`` picks the namespaces read."""

    provider: str
    flavor: Literal["direct", "bedrock", "vertex"] = "direct"

    def body(self, model_id: str, request: ModelRequest) -> tuple[JsonObject, tuple[SettingWarning, ...]]:
        settings = request.settings
        warnings: list[SettingWarning] = []
        body: JsonObject = {}
        if self.flavor == "direct":
            body["model"] = model_id
        else:
            body["anthropic_version"] = BODY_VERSIONS[self.flavor]
        body["max_tokens"] = settings.max_output_tokens
        if request.instructions:
            body["system"] = request.instructions
        body["messages"] = anthropic_messages(request)
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.stop_sequences is not None:
            body["stop_sequences"] = list(settings.stop_sequences)
        if settings.seed is not None:
            warnings.append(dropped("config.seed", self.provider, "Anthropic models take no seed"))
        if settings.reasoning is not None:
            warnings.append(
                dropped("config.reasoning", self.provider, "Anthropic models take thinking through provider_options")
            )
        tools: list[JsonObject] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in request.tools
        ]
        if request.output is not None:
            tools.append(
                {
                    "name": JSON_TOOL,
                    "description": JSON_TOOL_DESCRIPTION,
                    "input_schema": request.output.schema,
                }
            )
        thinking = anthropic_thinking(first_option(request.provider_options, self.provider, "thinking"))
        if thinking is None and self.provider == "bedrock-anthropic":
            reasoning_config = first_option(request.provider_options, self.provider, "reasoningConfig")
            thinking = anthropic_thinking(reasoning_config)
        if thinking is not None:
            body["thinking"] = thinking
        if request.output is not None:
            # Thinking refuses a forced tool; the model is then asked, not forced, to answer through it.
            if thinking is not None and thinking.get("type") != "disabled":
                body["tool_choice"] = {"type": "auto"}
            else:
                body["tool_choice"] = {"type": "any"} if request.tools else {"type": "tool", "name": JSON_TOOL}
        if tools:
            body["tools"] = tools
        return body, tuple(warnings)

    def answer(self, body: bytes, scrub: Scrubber, request: ModelRequest) -> ModelAnswer:
        return read_answer(self._parse, body, self.provider, scrub, request)

    def _parse(self, document: JsonObject, provider: str, request: ModelRequest) -> ModelAnswer:
        content = document.get("content")
        if not isinstance(content, list):
            raise UnreadableAnswer("the answer has no content list")
        read = ToolUseAnswer(wants_json=request.output is not None)
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                read.text(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                read.tool_use(block, "id")
        # input_tokens is the uncached part; the total adds the cache reads and writes (§5.3).
        usage = cache_apart_usage(
            document.get("usage"),
            uncached="input_tokens",
            read="cache_read_input_tokens",
            written="cache_creation_input_tokens",
            produced="output_tokens",
            total=None,
        )
        finish, raw_reason = finish_of(document.get("stop_reason"), STOP_REASONS, provider, usage)
        text, finish = read.text_and_finish(finish)
        return ModelAnswer(
            text=text,
            tool_calls=tuple(read.calls),
            finish_reason=finish,
            raw_finish_reason=raw_reason,
            usage=usage,
            response_id=text_or_none(document.get("id")),
            answered_model=text_or_none(document.get("model")),
            replay=replay_of(REPLAY, content, read.calls),
        )
