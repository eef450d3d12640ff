"""Amazon Bedrock Converse (``bedrock``): the same mapping in Converse's own shapes.

A JSON output is asked for as Anthropic's mapping does: a tool named ``json`` whose input is the answer.
``reasoningConfig`` goes in ``additionalModelRequestFields``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from auto_runtime.models.answers import FinishReason, ModelAnswer, SettingWarning
from auto_runtime.models.conversation import AssistantTurn, ModelRequest, ToolResultsTurn, UserTurn
from auto_runtime.models.protocols.common import (
    JsonObject,
    MergedTurns,
    UnreadableAnswer,
    arguments_object,
    dig,
    dropped,
    finish_of,
    read_answer,
    replay_of,
)
from auto_runtime.models.protocols.json_tool import JSON_TOOL, JSON_TOOL_DESCRIPTION, ToolUseAnswer
from auto_runtime.models.protocols.usage import cache_apart_usage
from auto_runtime.models.provider_options import first_option
from auto_runtime.models.provider_words import Scrubber

REPLAY = "bedrock_converse"
STOP_REASONS: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "content_filtered": "content_filter",
    "guardrail_intervened": "content_filter",
}


def converse_messages(request: ModelRequest) -> list[JsonObject]:
    merged = MergedTurns("content")
    for turn in request.turns:
        if isinstance(turn, UserTurn):
            merged.add("user", [{"text": turn.text}])
        elif isinstance(turn, AssistantTurn) and turn.replay is not None and turn.replay.protocol == REPLAY:
            merged.add("assistant", [dict(block) for block in turn.replay.items])
        elif isinstance(turn, AssistantTurn):
            blocks: list[JsonObject] = [{"text": turn.text}] if turn.text else []
            blocks += [
                {"toolUse": {"toolUseId": call.id, "name": call.name, "input": arguments_object(call.arguments)}}
                for call in turn.tool_calls
            ]
            merged.add("assistant", blocks)
        elif isinstance(turn, ToolResultsTurn):
            merged.add(
                "user",
                [
                    {
                        "toolResult": {
                            "toolUseId": result.call_id,
                            "content": [{"text": result.content}],
                            "status": "error" if result.is_error else "success",
                        }
                    }
                    for result in turn.results
                ],
            )
    return merged.messages


@dataclass(frozen=True)
class BedrockConverse:
    provider: str = "bedrock"

    def body(self, model_id: str, request: ModelRequest) -> tuple[JsonObject, tuple[SettingWarning, ...]]:
        settings = request.settings
        warnings: list[SettingWarning] = []
        body: JsonObject = {"messages": converse_messages(request)}
        if request.instructions:
            body["system"] = [{"text": request.instructions}]
        inference: JsonObject = {"maxTokens": settings.max_output_tokens}
        if settings.temperature is not None:
            inference["temperature"] = settings.temperature
        if settings.top_p is not None:
            inference["topP"] = settings.top_p
        if settings.stop_sequences is not None:
            inference["stopSequences"] = list(settings.stop_sequences)
        body["inferenceConfig"] = inference
        if settings.seed is not None:
            warnings.append(dropped("config.seed", self.provider, "Bedrock Converse takes no seed"))
        if settings.reasoning is not None:
            warnings.append(
                dropped("config.reasoning", self.provider, "Bedrock takes reasoningConfig through provider_options")
            )
        tools: list[JsonObject] = [
            {"toolSpec": {"name": tool.name, "description": tool.description, "inputSchema": {"json": tool.parameters}}}
            for tool in request.tools
        ]
        if request.output is not None:
            tools.append(
                {
                    "toolSpec": {
                        "name": JSON_TOOL,
                        "description": JSON_TOOL_DESCRIPTION,
                        "inputSchema": {"json": request.output.schema},
                    }
                }
            )
        if tools:
            tool_config: JsonObject = {"tools": tools}
            if request.output is not None:
                tool_config["toolChoice"] = {"any": {}} if request.tools else {"tool": {"name": JSON_TOOL}}
            body["toolConfig"] = tool_config
        reasoning_config = first_option(request.provider_options, self.provider, "reasoningConfig")
        if reasoning_config is not None:
            body["additionalModelRequestFields"] = {"reasoningConfig": reasoning_config}
        return body, tuple(warnings)

    def answer(self, body: bytes, scrub: Scrubber, request: ModelRequest) -> ModelAnswer:
        return read_answer(self._parse, body, self.provider, scrub, request)

    def _parse(self, document: JsonObject, provider: str, request: ModelRequest) -> ModelAnswer:
        content = dig(document, "output", "message", "content")
        if not isinstance(content, list):
            raise UnreadableAnswer("the answer has no output.message.content list")
        read = ToolUseAnswer(wants_json=request.output is not None)
        for block in content:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                read.text(block["text"])
            elif isinstance(block.get("toolUse"), dict):
                read.tool_use(block["toolUse"], "toolUseId")
        # inputTokens counts what was read afresh; cache reads and writes are counted apart.
        usage = cache_apart_usage(
            document.get("usage"),
            uncached="inputTokens",
            read="cacheReadInputTokens",
            written="cacheWriteInputTokens",
            produced="outputTokens",
            total="totalTokens",
        )
        finish, raw_reason = finish_of(document.get("stopReason"), STOP_REASONS, provider, usage)
        text, finish = read.text_and_finish(finish)
        return ModelAnswer(
            text=text,
            tool_calls=tuple(read.calls),
            finish_reason=finish,
            raw_finish_reason=raw_reason,
            usage=usage,
            replay=replay_of(REPLAY, content, read.calls),
        )
