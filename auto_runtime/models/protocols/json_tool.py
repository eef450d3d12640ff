"""A JSON output asked for as a tool (Anthropic Messages, Bedrock Converse): a tool named ``json`` whose
input is the answer. The answer's ``json`` call comes back as the answer's text, never as a tool call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.models.answers import FinishReason, ToolCall
from auto_runtime.models.protocols.common import compact

JSON_TOOL = "json"
JSON_TOOL_DESCRIPTION = "Give your answer as this tool's input; it is the whole answer."


@dataclass
class ToolUseAnswer:
    """An answer's text and tool-use blocks, read one at a time. With ``wants_json`` (the request asked
    for a JSON output) the first ``json`` call is the answer, not a call."""

    wants_json: bool
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    json_answer: str | None = None

    def text(self, text: str) -> None:
        self.texts.append(text)

    def tool_use(self, use: Mapping[str, Any], id_member: str) -> None:
        """A tool use with ``name`` and ``input``, its id in ``use[id_member]``."""
        if self.wants_json and use.get("name") == JSON_TOOL and self.json_answer is None:
            self.json_answer = compact(use.get("input", {}))
        else:
            arguments = compact(use.get("input", {}))
            self.calls.append(ToolCall(id=str(use[id_member]), name=str(use["name"]), arguments=arguments))

    def text_and_finish(self, finish: FinishReason) -> tuple[str | None, FinishReason]:
        """The ``json`` call's input when there was one (a finish on tool calls with no other call is then
        a stop), else the texts joined (None when there were none)."""
        if self.json_answer is None:
            return ("".join(self.texts) if self.texts else None), finish
        if finish == "tool_calls" and not self.calls:
            return self.json_answer, "stop"
        return self.json_answer, finish
