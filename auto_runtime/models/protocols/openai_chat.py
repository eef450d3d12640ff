"""OpenAI Chat Completions (reasoning-format §5.1).

Every gateway speaks it, and ``openai`` with ``OPENAI_API=chat_completions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.models.answers import FinishReason, ModelAnswer, SettingWarning, ToolCall
from auto_runtime.models.conversation import AssistantTurn, ModelRequest, ToolResultsTurn, UserTurn
from auto_runtime.models.protocols.common import (
    JsonObject,
    UnreadableAnswer,
    compact,
    dropped,
    finish_of,
    read_answer,
    text_or_none,
)
from auto_runtime.models.protocols.usage import openai_usage
from auto_runtime.models.provider_options import first_option, gateway_fields
from auto_runtime.models.provider_words import Scrubber
from auto_runtime.settings import ModelGateway

FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
}


def chat_messages(request: ModelRequest) -> list[JsonObject]:
    messages: list[JsonObject] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    for turn in request.turns:
        if isinstance(turn, UserTurn):
            messages.append({"role": "user", "content": turn.text})
        elif isinstance(turn, AssistantTurn):
            message: JsonObject = {"role": "assistant", "content": turn.text}
            if turn.tool_calls:
                message["tool_calls"] = [
                    {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                    for call in turn.tool_calls
                ]
            messages.append(message)
        elif isinstance(turn, ToolResultsTurn):
            messages.extend(
                {"role": "tool", "tool_call_id": result.call_id, "content": result.content} for result in turn.results
            )
    return messages


@dataclass(frozen=True)
class OpenAIChat:
    """``gateway`` None is OpenAI's own endpoint: ``max_completion_tokens``, a JSON schema always, and the
    ``openai`` namespace's options. A gateway sends ``max_tokens``, ``json_schema`` only with its entry's
    ``structured_outputs`` (else ``json_object``, the schema checked locally only), and its allowed
    provider options as top-level fields.
    """

    provider: str
    gateway: ModelGateway | None = None

    @property
    def direct(self) -> bool:
        return self.gateway is None

    def body(self, model_id: str, request: ModelRequest) -> tuple[JsonObject, tuple[SettingWarning, ...]]:
        settings = request.settings
        body: JsonObject = {"model": model_id, "messages": chat_messages(request)}
        body["max_completion_tokens" if self.direct else "max_tokens"] = settings.max_output_tokens
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.seed is not None:
            body["seed"] = settings.seed
        if settings.stop_sequences is not None:
            body["stop"] = list(settings.stop_sequences)
        if settings.reasoning is not None:
            body["reasoning_effort"] = settings.reasoning
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
                }
                for tool in request.tools
            ]
        if request.output is not None:
            if self.gateway is None or self.gateway.structured_outputs:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.output.name, "schema": request.output.schema, "strict": True},
                }
            else:
                body["response_format"] = {"type": "json_object"}
        if self.gateway is not None:
            for key, value in gateway_fields(request.provider_options, self.gateway).items():
                body.setdefault(key, value)
            return body, ()
        verbosity = first_option(request.provider_options, "openai", "textVerbosity")
        if verbosity is not None:
            body["verbosity"] = verbosity
        logit_bias = first_option(request.provider_options, "openai", "logitBias")
        if logit_bias is not None:
            body["logit_bias"] = logit_bias
        if first_option(request.provider_options, "openai", "reasoningMode") is not None:
            return body, (dropped("provider_options.reasoningMode", self.provider),)
        return body, ()

    def answer(self, body: bytes, scrub: Scrubber, request: ModelRequest) -> ModelAnswer:
        return read_answer(self._parse, body, self.provider, scrub, request)

    def _parse(self, document: JsonObject, provider: str, request: ModelRequest) -> ModelAnswer:
        choices = document.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise UnreadableAnswer("the answer has no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise UnreadableAnswer("the first choice has no message")
        # prompt_tokens and completion_tokens, with their cached and reasoning details (§5.1)
        usage = openai_usage(document.get("usage"), "prompt_tokens", "completion_tokens")
        finish, raw_reason = finish_of(choice.get("finish_reason"), FINISH_REASONS, provider, usage)
        calls = tuple(_tool_call(item, index) for index, item in enumerate(message.get("tool_calls") or (), start=1))
        if calls and finish == "stop":
            finish = "tool_calls"
        return ModelAnswer(
            text=_content_text(message.get("content")),
            tool_calls=calls,
            finish_reason=finish,
            raw_finish_reason=raw_reason,
            usage=usage,
            response_id=text_or_none(document.get("id")),
            answered_model=text_or_none(document.get("model")),
        )


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # some gateways answer a list of parts
        texts = [part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        return "".join(texts) if texts else None
    raise UnreadableAnswer("the message content is neither text nor parts")


def _tool_call(item: Any, number: int) -> ToolCall:
    """One tool call; a gateway that gives no id gets ``call-<n>``, so results can name the call."""
    function = item.get("function") if isinstance(item, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise UnreadableAnswer("a tool call has no function name")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # a few gateways send an object instead of JSON text
        arguments = compact(arguments)
    call_id = item.get("id")
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call-{number}",
        name=function["name"],
        arguments=arguments if isinstance(arguments, str) else "",
    )
