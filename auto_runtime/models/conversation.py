"""What one model call sends: instructions, the turns so far, the tools offered, the output wanted, settings.

The turns alternate as a tool loop produces them: a :class:`UserTurn` first, then an
:class:`AssistantTurn` carrying the tool calls the model asked for, then a :class:`ToolResultsTurn`
answering every one of those calls, and so on. Each protocol maps these to its own messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from auto_runtime.models.answers import ModelAnswer, Replay, ToolCall

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
JsonSchema = Mapping[str, Any]
DEFAULT_MAX_OUTPUT_TOKENS = 1024


@dataclass(frozen=True, slots=True)
class UserTurn:
    text: str


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """An earlier answer of the model, sent back as it was: its text and the tool calls it asked for.

    Build it with :func:`assistant_turn` so the provider's own content (:class:`Replay`) goes back too.
    """

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    replay: Replay | None = None


def assistant_turn(answer: ModelAnswer) -> AssistantTurn:
    """The turn to append after ``answer`` in a tool loop."""
    return AssistantTurn(answer.text, answer.tool_calls, answer.replay)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one tool call: ``call_id`` and ``name`` are those of the :class:`ToolCall`."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultsTurn:
    results: tuple[ToolResult, ...]


Turn = UserTurn | AssistantTurn | ToolResultsTurn


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One function tool offered to the model; ``parameters`` is its input schema, sent unchanged (not strict)."""

    name: str
    description: str
    parameters: JsonSchema


@dataclass(frozen=True, slots=True)
class JsonOutput:
    """Ask for a JSON answer matching ``schema``; ``name`` is the schema's name where a protocol needs one."""

    schema: JsonSchema
    name: str = "output"


@dataclass(frozen=True, slots=True)
class CallSettings:
    """The document's ``config``: sent in each provider's own field names (reasoning-format §4.4)."""

    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop_sequences: tuple[str, ...] | None = None
    reasoning: ReasoningEffort | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call.

    ``instructions`` is the rendered system block, when there is one. ``output`` None asks for text.
    ``tools`` empty sends no tools field (a run without tools, or the final step of a tool loop).
    ``provider_options`` is the document's ``provider_options``, keyed by namespace; each provider reads
    only its own namespaces (reasoning-format §4.5).
    """

    turns: tuple[Turn, ...]
    instructions: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    output: JsonOutput | None = None
    settings: CallSettings = field(default_factory=CallSettings)
    provider_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def prompt_texts(self) -> tuple[str, ...]:
        """The instructions and the user's messages, which provider words must never quote whole."""
        texts = [turn.text for turn in self.turns if isinstance(turn, UserTurn)]
        if self.instructions:
            texts.append(self.instructions)
        return tuple(texts)
