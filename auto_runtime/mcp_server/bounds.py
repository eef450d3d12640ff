"""The bounds of served texts (spec mcp.md §4.5), checked once at start: the server refuses to start when a
served text breaks one.

| Text | Bound |
| A tool description | 3 to 8 sentences, at most 800 characters |
| An argument's description, at any depth | at most 300 characters |
| The instructions of a connection | at most 2,000 characters |
| A guide | at most 64 KiB |
| A recipe's prompt text | at most 4 KiB, its embedded format guide aside |
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from auto_runtime.guides import MAX_GUIDE_BYTES, MAX_RECIPE_BYTES, Guide, Recipe, render_request
from auto_runtime.json_pointers import escape
from auto_runtime.mcp_server.instructions import MAX_INSTRUCTIONS_CHARACTERS
from auto_runtime.mcp_server.toolset import ServedTool

MAX_DESCRIPTION_CHARACTERS = 800
DESCRIPTION_SENTENCES = (3, 8)
MAX_ARGUMENT_DESCRIPTION_CHARACTERS = 300
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z0-9])")


class ServedTextOutOfBounds(ValueError):
    """A text the MCP endpoints would serve breaks a bound of spec mcp.md §4.5."""


def sentences_in(text: str) -> int:
    return len([s for s in SENTENCE_END.split(text.strip()) if s])


def _descriptions(node: Any, pointer: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield pointer or "/", value
            else:
                yield from _descriptions(value, f"{pointer}/{escape(key)}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _descriptions(item, f"{pointer}/{index}")


def tool_text_problems(tools: Iterable[ServedTool]) -> list[str]:
    problems: list[str] = []
    for served in tools:
        description = served.tool.description or ""
        count = sentences_in(description)
        low, high = DESCRIPTION_SENTENCES
        if not low <= count <= high or len(description) > MAX_DESCRIPTION_CHARACTERS:
            problems.append(
                f"the description of {served.name} has {count} sentences and {len(description)} characters; "
                f"a tool description has {low} to {high} sentences and at most {MAX_DESCRIPTION_CHARACTERS}"
            )
        for pointer, text in _descriptions(served.tool.input_schema):
            if len(text) > MAX_ARGUMENT_DESCRIPTION_CHARACTERS:
                problems.append(
                    f"the description at {pointer} of {served.name}'s input has {len(text)} characters; "
                    f"at most {MAX_ARGUMENT_DESCRIPTION_CHARACTERS}"
                )
    return problems


def guide_problems(guides: Mapping[str, Guide], recipes: Mapping[str, Recipe]) -> list[str]:
    problems: list[str] = []
    for guide in guides.values():
        size = len(guide.text.encode("utf-8"))
        if size > MAX_GUIDE_BYTES:
            problems.append(f"the guide {guide.name} has {size} bytes; at most {MAX_GUIDE_BYTES}")
    for recipe in recipes.values():
        recipe_guide = guides.get(recipe.name)
        if recipe_guide is None or recipe.format_guide not in guides:
            problems.append(f"the recipe {recipe.name} needs its guide and its format guide {recipe.format_guide}")
            continue
        filled = {a.name: "" if not a.required else a.name for a in recipe.arguments}
        text = f"{render_request(recipe, filled)}\n\n{recipe_guide.text}"
        size = len(text.encode("utf-8"))
        if size > MAX_RECIPE_BYTES:
            problems.append(f"the recipe {recipe.name} has {size} bytes of prompt text; at most {MAX_RECIPE_BYTES}")
    return problems


def instructions_problems(instructions: Iterable[tuple[str, str]]) -> list[str]:
    return [
        f"the instructions of {where} have {len(text)} characters; at most {MAX_INSTRUCTIONS_CHARACTERS}"
        for where, text in instructions
        if len(text) > MAX_INSTRUCTIONS_CHARACTERS
    ]


def require_within_bounds(problems: list[str]) -> None:
    if problems:
        raise ServedTextOutOfBounds("served texts out of bounds: " + "; ".join(problems))
