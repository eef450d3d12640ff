"""A tool call's result as text: what a model reads of it and what a hand call (`execute`) answers."""

from __future__ import annotations

import json

from auto_runtime.tools.servers import ToolCallResult

MAX_ERROR_CHARS = 300
NO_CONTENT = "(The tool answered with no content.)"


def result_text(result: ToolCallResult) -> str:
    """Text blocks joined by newlines, a placeholder for each other block, the structured content as JSON only
    when there is no text block, and a note when there is nothing."""
    parts: list[str] = []
    has_text = any(block.kind == "text" for block in result.blocks)
    for block in result.blocks:
        if block.kind == "text":
            parts.append(block.text or "")
        else:
            media = f" ({block.mime_type})" if block.mime_type else ""
            parts.append(f"[{block.kind} content{media}, not shown]")
    if not has_text and result.structured is not None:
        parts.append(json.dumps(result.structured, ensure_ascii=False))
    text = "\n".join(parts)
    return text if text.strip() else NO_CONTENT


def error_text(words: str) -> str:
    """A failure's words as shown, at most `MAX_ERROR_CHARS` characters."""
    return words[:MAX_ERROR_CHARS]
