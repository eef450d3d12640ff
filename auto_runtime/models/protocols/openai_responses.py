"""OpenAI Responses (reasoning-format §5.2): ``openai`` by default, and ``azure``.

Nothing is stored on the provider (``store: false``).
"""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.models.answers import FinishReason, ModelAnswer, SettingWarning, ToolCall
from auto_runtime.models.conversation import AssistantTurn, ModelRequest, ToolResultsTurn, UserTurn
from auto_runtime.models.failures import content_filtered
from auto_runtime.models.protocols.common import (
    JsonObject,
    UnreadableAnswer,
    compact,
    dig,
    dropped,
    read_answer,
    text_or_none,
)
from auto_runtime.models.protocols.usage import openai_usage
from auto_runtime.models.provider_options import first_option
from auto_runtime.models.provider_words import Scrubber


def responses_input(request: ModelRequest) -> list[JsonObject]:
    items: list[JsonObject] = []
    for turn in request.turns:
        if isinstance(turn, UserTurn):
            items.append({"role": "user", "content": turn.text})
        elif isinstance(turn, AssistantTurn):
            if turn.text:
                items.append({"role": "assistant", "content": turn.text})
            items.extend(
                {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}
                for call in turn.tool_calls
            )
        elif isinstance(turn, ToolResultsTurn):
            items.extend(
                {"type": "function_call_output", "call_id": result.call_id, "output": result.content}
                for result in turn.results
            )
    return items


@dataclass(frozen=True)
class OpenAIResponses:
    """``options_provider`` names whose namespaces are read: ``openai``, or ``azure`` (its own, else ``openai``)."""

    provider: str
    options_provider: str = "openai"

    def body(self, model_id: str, request: ModelRequest) -> tuple[JsonObject, tuple[SettingWarning, ...]]:
        settings = request.settings
        warnings: list[SettingWarning] = []
        body: JsonObject = {"model": model_id, "store": False}
        if request.instructions:
            body["instructions"] = request.instructions
        body["input"] = responses_input(request)
        body["max_output_tokens"] = settings.max_output_tokens
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.seed is not None:
            warnings.append(dropped("config.seed", self.provider, "the Responses API takes no seed"))
        if settings.stop_sequences is not None:
            why = "the Responses API takes no stop sequences"
            warnings.append(dropped("config.stop_sequences", self.provider, why))
        if settings.reasoning is not None:
            body["reasoning"] = {"effort": settings.reasoning}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": False,
                }
                for tool in request.tools
            ]
        text: JsonObject = {}
        if request.output is not None:
            text["format"] = {
                "type": "json_schema",
                "name": request.output.name,
                "schema": request.output.schema,
                "strict": True,
            }
        verbosity = first_option(request.provider_options, self.options_provider, "textVerbosity")
        if verbosity is not None:
            text["verbosity"] = verbosity
        if text:
            body["text"] = text
        if first_option(request.provider_options, self.options_provider, "logitBias") is not None:
            why = "the Responses API takes no logit bias"
            warnings.append(dropped("provider_options.logitBias", self.provider, why))
        if first_option(request.provider_options, self.options_provider, "reasoningMode") is not None:
            warnings.append(dropped("provider_options.reasoningMode", self.provider))
        return body, tuple(warnings)

    def answer(self, body: bytes, scrub: Scrubber, request: ModelRequest) -> ModelAnswer:
        return read_answer(self._parse, body, self.provider, scrub, request)

    def _parse(self, document: JsonObject, provider: str, request: ModelRequest) -> ModelAnswer:
        output = document.get("output")
        if not isinstance(output, list):
            raise UnreadableAnswer("the answer has no output list")
        texts: list[str] = []
        calls: list[ToolCall] = []
        refused = False
        for item in output:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "message":
                for part in item.get("content") or ():
                    if isinstance(part, dict) and part.get("type") == "output_text":
                        texts.append(str(part.get("text", "")))
                    elif isinstance(part, dict) and part.get("type") == "refusal":
                        refused = True
            elif item.get("type") == "function_call":
                arguments = item.get("arguments")
                calls.append(
                    ToolCall(
                        id=str(item.get("call_id") or item.get("id") or ""),
                        name=str(item["name"]),
                        arguments=arguments if isinstance(arguments, str) else compact(arguments or {}),
                    )
                )
        # input_tokens and output_tokens, with their cached and reasoning details (§5.2)
        usage = openai_usage(document.get("usage"), "input_tokens", "output_tokens")
        status = document.get("status")
        reason = dig(document, "incomplete_details", "reason")
        raw = status if isinstance(status, str) else None
        if status == "incomplete" and isinstance(reason, str):
            raw = reason
        finish: FinishReason
        if refused or (status == "incomplete" and reason == "content_filter"):
            raise content_filtered(provider, raw or "refusal", usage)
        if status == "incomplete" and reason == "max_output_tokens":
            finish = "length"
        elif status == "completed":
            finish = "tool_calls" if calls else "stop"
        elif status == "failed":
            finish = "error"
        else:
            finish = "other"
        return ModelAnswer(
            text="".join(texts) if texts else None,
            tool_calls=tuple(calls),
            finish_reason=finish,
            raw_finish_reason=raw,
            usage=usage,
            response_id=text_or_none(document.get("id")),
            answered_model=text_or_none(document.get("model")),
        )
