"""What every wire protocol shares: reading a JSON answer, counting tokens, warning of dropped settings."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from auto_runtime.models.answers import FinishReason, ModelAnswer, Replay, SettingWarning, TokenUsage, ToolCall
from auto_runtime.models.conversation import ModelRequest
from auto_runtime.models.failures import ModelCallFailure, content_filtered, unreadable_answer
from auto_runtime.models.provider_words import Scrubber

JsonObject = dict[str, Any]


class WireProtocol(Protocol):
    """One protocol: the body to send for a request, and the answer a 2xx body stands for."""

    def body(self, model_id: str, request: ModelRequest) -> tuple[JsonObject, tuple[SettingWarning, ...]]: ...

    def answer(self, body: bytes, scrub: Scrubber, request: ModelRequest) -> ModelAnswer:
        """Raises :class:`ModelCallFailure` for an unreadable body or a content-filter finish."""
        ...


class UnreadableAnswer(Exception):
    """The body is not the protocol's answer; the message says why, for the operator's log."""


def json_object(body: bytes) -> JsonObject:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise UnreadableAnswer("the body is not JSON") from error
    if not isinstance(document, dict):
        raise UnreadableAnswer("the body is not a JSON object")
    return document


def read_answer(parse: Any, body: bytes, provider: str, scrub: Scrubber, request: ModelRequest) -> ModelAnswer:
    """Run ``parse(document, provider, request)``, typing every reading problem as an unreadable answer."""
    try:
        result: ModelAnswer = parse(json_object(body), provider, request)
    except ModelCallFailure:
        raise
    except (UnreadableAnswer, KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise unreadable_answer(provider, str(error) or type(error).__name__, body, scrub) from error
    return result


def text_or_none(value: Any) -> str | None:
    """A member the answer may give as text (an id, a model name), or None when it is anything else."""
    return value if isinstance(value, str) else None


def finish_of(
    raw: Any, reasons: Mapping[str, FinishReason], provider: str, usage: TokenUsage
) -> tuple[FinishReason, str | None]:
    """The finish reason ``reasons`` maps the provider's own to (``other`` when unknown), and that own reason
    when it is text. Raises :class:`ModelCallFailure` for a content-filter finish."""
    raw_reason = text_or_none(raw)
    finish = reasons.get(raw_reason or "", "other")
    if finish == "content_filter":
        raise content_filtered(provider, raw_reason, usage)
    return finish, raw_reason


def replay_of(protocol: str, blocks: Iterable[Any], calls: Sequence[ToolCall]) -> Replay | None:
    """The answer's blocks, kept to send back as they were when the answer called tools; else None."""
    return Replay(protocol, tuple(block for block in blocks if isinstance(block, dict))) if calls else None


class MergedTurns:
    """Messages for protocols whose roles alternate: a turn of the last message's role joins that message.

    ``blocks`` names the member holding a message's blocks; ``keep_empty`` still adds a turn with none.
    """

    def __init__(self, blocks: str = "content", *, keep_empty: bool = False) -> None:
        self.messages: list[JsonObject] = []
        self._blocks = blocks
        self._keep_empty = keep_empty

    def add(self, role: str, blocks: list[JsonObject]) -> None:
        if not blocks and not self._keep_empty:
            return
        if self.messages and self.messages[-1]["role"] == role:
            self.messages[-1][self._blocks].extend(blocks)
        else:
            self.messages.append({"role": role, self._blocks: blocks})


def number(value: Any) -> int | None:
    """A token count, or None when the provider gave none (or not a whole number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def dig(document: Any, *path: str) -> Any:
    """``document[path[0]][path[1]]...``, or None where a step is missing or not an object."""
    for key in path:
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document


def dropped(feature: str, provider: str, why: str = "") -> SettingWarning:
    """A setting the protocol does not send (reasoning-format §4.4): reported, never refused."""
    detail = f"{feature} is not sent to {provider}" + (f": {why}" if why else "")
    return SettingWarning(type="unsupported_setting", feature=feature, detail=detail)


def arguments_object(arguments: str) -> Any:
    """A tool call's JSON text as the value protocols that send objects need (``{}`` when it is not JSON)."""
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
