"""Gemini ``generateContent`` (reasoning-format §5.4): ``google``, and ``vertex`` with its own endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.models.answers import FinishReason, ModelAnswer, SettingWarning, TokenUsage, ToolCall, difference
from auto_runtime.models.conversation import AssistantTurn, ModelRequest, ToolResultsTurn, UserTurn
from auto_runtime.models.failures import content_filtered
from auto_runtime.models.protocols.common import (
    JsonObject,
    MergedTurns,
    UnreadableAnswer,
    arguments_object,
    compact,
    dig,
    dropped,
    finish_of,
    number,
    read_answer,
    replay_of,
    text_or_none,
)
from auto_runtime.models.provider_options import first_option
from auto_runtime.models.provider_words import Scrubber

REPLAY = "gemini"
FINISH_REASONS: Mapping[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "BLOCKLIST": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
}


def gemini_contents(request: ModelRequest) -> list[JsonObject]:
    """The turns as contents of roles ``user`` and ``model``, consecutive turns of one role merged."""
    merged = MergedTurns("parts")
    for turn in request.turns:
        if isinstance(turn, UserTurn):
            merged.add("user", [{"text": turn.text}])
        elif isinstance(turn, AssistantTurn) and turn.replay is not None and turn.replay.protocol == REPLAY:
            merged.add("model", [dict(part) for part in turn.replay.items])
        elif isinstance(turn, AssistantTurn):
            parts: list[JsonObject] = [{"text": turn.text}] if turn.text else []
            parts += [
                {"functionCall": {"name": call.name, "args": arguments_object(call.arguments)}}
                for call in turn.tool_calls
            ]
            merged.add("model", parts)
        elif isinstance(turn, ToolResultsTurn):
            merged.add(
                "user",
                [
                    {
                        "functionResponse": {
                            "name": result.name,
                            "response": {"error": result.content} if result.is_error else {"output": result.content},
                        }
                    }
                    for result in turn.results
                ],
            )
    return merged.messages


@dataclass(frozen=True)
class Gemini:
    """``provider`` is ``google`` or ``vertex``; it also picks the namespaces of provider options read."""

    provider: str

    def body(self, model_id: str, request: ModelRequest) -> tuple[JsonObject, tuple[SettingWarning, ...]]:
        settings = request.settings
        warnings: list[SettingWarning] = []
        body: JsonObject = {}
        if request.instructions:
            body["systemInstruction"] = {"parts": [{"text": request.instructions}]}
        body["contents"] = gemini_contents(request)
        config: JsonObject = {"maxOutputTokens": settings.max_output_tokens}
        if settings.temperature is not None:
            config["temperature"] = settings.temperature
        if settings.top_p is not None:
            config["topP"] = settings.top_p
        if settings.seed is not None:
            config["seed"] = settings.seed
        if settings.stop_sequences is not None:
            config["stopSequences"] = list(settings.stop_sequences)
        if settings.reasoning is not None:
            warnings.append(
                dropped("config.reasoning", self.provider, "Gemini takes thinking through provider_options")
            )
        if request.output is not None:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = request.output.schema
        thinking = first_option(request.provider_options, self.provider, "thinkingConfig")
        if thinking is not None:
            config["thinkingConfig"] = thinking
        body["generationConfig"] = config
        safety = first_option(request.provider_options, self.provider, "safetySettings")
        if safety is not None:
            body["safetySettings"] = safety
        if first_option(request.provider_options, self.provider, "threshold") is not None:
            warnings.append(dropped("provider_options.threshold", self.provider))
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
                        for tool in request.tools
                    ]
                }
            ]
        return body, tuple(warnings)

    def answer(self, body: bytes, scrub: Scrubber, request: ModelRequest) -> ModelAnswer:
        return read_answer(self._parse, body, self.provider, scrub, request)

    def _parse(self, document: JsonObject, provider: str, request: ModelRequest) -> ModelAnswer:
        usage = gemini_usage(document.get("usageMetadata"))
        candidates = document.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            blocked = dig(document, "promptFeedback", "blockReason")
            if isinstance(blocked, str):
                raise content_filtered(provider, blocked, usage)
            raise UnreadableAnswer("the answer has no candidates")
        candidate = candidates[0]
        finish, raw_reason = finish_of(candidate.get("finishReason"), FINISH_REASONS, provider, usage)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in dig(candidate, "content", "parts") or ():
            if not isinstance(part, dict) or part.get("thought") is True:
                continue
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                call_id = call.get("id")
                calls.append(
                    ToolCall(
                        id=call_id if isinstance(call_id, str) else f"call-{len(calls) + 1}",
                        name=str(call["name"]),
                        arguments=compact(call.get("args", {})),
                    )
                )
        if calls and finish == "stop":
            finish = "tool_calls"
        return ModelAnswer(
            text="".join(texts) if texts else None,
            tool_calls=tuple(calls),
            finish_reason=finish,
            raw_finish_reason=raw_reason,
            usage=usage,
            response_id=text_or_none(document.get("responseId")),
            answered_model=text_or_none(document.get("modelVersion")),
            replay=replay_of(REPLAY, dig(candidate, "content", "parts") or (), calls),
        )


def gemini_usage(usage: Any) -> TokenUsage:
    """``promptTokenCount`` includes the cached part; thoughts are counted apart from the candidates."""
    prompt = number(dig(usage, "promptTokenCount"))
    cached = number(dig(usage, "cachedContentTokenCount"))
    candidates = number(dig(usage, "candidatesTokenCount"))
    thoughts = number(dig(usage, "thoughtsTokenCount"))
    produced = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    return TokenUsage(
        input_total=prompt,
        input_uncached=difference(prompt, cached if cached is not None else 0) if prompt is not None else None,
        input_cache_read=cached if cached is not None else (0 if prompt is not None else None),
        input_cache_write=None,
        output_total=produced,
        output_text=candidates,
        output_reasoning=thoughts if thoughts is not None else (0 if candidates is not None else None),
        total=number(dig(usage, "totalTokenCount")),
    )
