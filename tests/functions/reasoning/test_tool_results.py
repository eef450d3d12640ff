"""What the model is given and reads back of tools (reasoning-format §7.2 and §7.4)."""

from __future__ import annotations

import hashlib
import json

from auto_runtime.functions.reasoning.tool_results import compatibility_warnings, model_names, shown_to_model
from auto_runtime.tools import ContentBlock, OfferedTool, ToolCallResult
from auto_runtime.tools.result_text import NO_CONTENT, result_text


def _tool(server: str, tool: str) -> OfferedTool:
    return OfferedTool(server, tool, "", {"type": "object"}, read_only=False)


def test_model_facing_names() -> None:
    long_tool = "x" * 70
    tools = [_tool("help-desk", "get.customer"), _tool("a", long_tool), _tool("s", "x.y"), _tool("s", "x_y")]
    names = model_names(tools)
    assert names[0] == "help_desk__get_customer"
    digest = hashlib.sha256(f"a/{long_tool}".encode()).hexdigest()[:8]
    assert names[1] == f"a__{'x' * 52}_{digest}" and len(names[1]) == 64
    assert names[2] != names[3] and names[2].startswith("s__x_y_") and len(set(names)) == 4


def test_result_texts() -> None:
    blocks = (ContentBlock("text", "one"), ContentBlock("image", None, "image/png"), ContentBlock("text", "two"))
    assert result_text(ToolCallResult(blocks)) == "one\n[image content (image/png), not shown]\ntwo"
    assert result_text(ToolCallResult((), structured={"a": 1})) == '{"a": 1}'
    assert result_text(ToolCallResult((ContentBlock("text", "t"),), structured={"a": 1})) == "t"
    assert result_text(ToolCallResult(())) == NO_CONTENT


def test_a_result_past_its_room_is_cut_with_a_note() -> None:
    text = json.dumps([{"row": n} for n in range(100)])
    shown, shown_bytes = shown_to_model(text, 50)
    assert shown_bytes == 50
    assert "Only the first 50 of" in shown and "fewer rows, fields or depth" in shown
    assert json.loads(shown.split("\n[Only")[0]) == text[:50]
    assert shown_to_model(text, None) == (text, None)


def test_compatibility_warnings_of_tool_input_schemas() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}}
    assert compatibility_warnings("a__b", schema, "openai") == []
    anthropic = compatibility_warnings("a__b", schema, "anthropic")
    assert {k: anthropic[0][k] for k in ("type", "feature")} == {
        "type": "compatibility",
        "feature": "a__b inputSchema#/properties/n/maximum",
    }
    assert compatibility_warnings("a__b", {"type": "array"}, "fake")[0]["feature"] == "a__b inputSchema#"
