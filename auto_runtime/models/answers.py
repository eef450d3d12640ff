"""What one model call answers: text, tool calls, the finish reason, token usage, ids and warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

FinishReason = Literal["stop", "length", "content_filter", "tool_calls", "error", "other"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. ``arguments`` is the JSON text the model wrote, kept as written."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts of one call, as record ``usage`` has them; a number the provider did not give is None.

    ``input_total`` counts every input token, cached or not; ``input_uncached`` those read afresh;
    ``input_cache_read`` those read from the provider's cache; ``input_cache_write`` those written to it.
    """

    input_total: int | None = None
    input_uncached: int | None = None
    input_cache_read: int | None = None
    input_cache_write: int | None = None
    output_total: int | None = None
    output_text: int | None = None
    output_reasoning: int | None = None
    total: int | None = None

    def as_record(self) -> dict[str, Any]:
        """The record's shape: ``{input: {total, uncached, cache_read, cache_write}, output: {...}, total}``."""
        return {
            "input": {
                "total": self.input_total,
                "uncached": self.input_uncached,
                "cache_read": self.input_cache_read,
                "cache_write": self.input_cache_write,
            },
            "output": {"total": self.output_total, "text": self.output_text, "reasoning": self.output_reasoning},
            "total": self.total,
        }

    def __add__(self, other: TokenUsage) -> TokenUsage:
        """Summed over calls: a field is None only when neither call gave it (record §9)."""

        def plus(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return TokenUsage(
            input_total=plus(self.input_total, other.input_total),
            input_uncached=plus(self.input_uncached, other.input_uncached),
            input_cache_read=plus(self.input_cache_read, other.input_cache_read),
            input_cache_write=plus(self.input_cache_write, other.input_cache_write),
            output_total=plus(self.output_total, other.output_total),
            output_text=plus(self.output_text, other.output_text),
            output_reasoning=plus(self.output_reasoning, other.output_reasoning),
            total=plus(self.total, other.total),
        )


def difference(whole: int | None, part: int | None) -> int | None:
    """``whole - part`` when both are known, else None."""
    if whole is None or part is None:
        return None
    return max(whole - part, 0)


def total_of(input_total: int | None, output_total: int | None) -> int | None:
    if input_total is None or output_total is None:
        return None
    return input_total + output_total


@dataclass(frozen=True, slots=True)
class Replay:
    """The provider's own content of an answer, to send back verbatim in the next step of a tool loop.

    Anthropic (and Bedrock Converse) need thinking blocks, with their signatures, sent back beside the
    tool calls they led to; Gemini needs the parts with their thought signatures. ``protocol`` names the
    protocol that can read ``items``; any other ignores them and rebuilds the turn from text and calls.
    Never recorded: it lives only for the run.
    """

    protocol: str
    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class SettingWarning:
    """A setting the provider ignores or the protocol drops: one entry of the record's ``warnings``."""

    type: str
    feature: str
    detail: str

    def as_record(self) -> dict[str, str]:
        return {"type": self.type, "feature": self.feature, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """The answer of one call.

    ``text`` is the answer's text (for a JSON output, the JSON text to parse; None when the model only
    called tools). ``finish_reason`` is one of the record's words and ``raw_finish_reason`` the
    provider's own. ``answered_model`` is the model as the provider named it. A content-filter finish
    never comes back as an answer: it is a :class:`~auto_runtime.models.failures.ModelCallFailure`.
    """

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: FinishReason
    raw_finish_reason: str | None
    usage: TokenUsage
    response_id: str | None = None
    answered_model: str | None = None
    warnings: tuple[SettingWarning, ...] = field(default=())
    replay: Replay | None = None
