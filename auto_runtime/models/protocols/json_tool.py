"""A JSON output asked for as a tool (Anthropic Messages, Bedrock Converse): a tool named ``json`` whose
input is the answer. The answer's ``json`` call comes back as the answer's text, never as a tool call."""

from __future__ import annotations

from collections.abc import Sequence

from auto_runtime.models.answers import FinishReason, ToolCall

JSON_TOOL = "json"
JSON_TOOL_DESCRIPTION = "Give your answer as this tool's input; it is the whole answer."


def json_tool_answer(
    json_answer: str | None, texts: Sequence[str], calls: Sequence[ToolCall], finish: FinishReason
) -> tuple[str | None, FinishReason]:
    """The answer's text and finish: the ``json`` call's input when there was one (a finish on tool calls
    with no other call is then a stop), else the text blocks joined (None when there were none)."""
    if json_answer is None:
        return ("".join(texts) if texts else None), finish
    if finish == "tool_calls" and not calls:
        return json_answer, "stop"
    return json_answer, finish
