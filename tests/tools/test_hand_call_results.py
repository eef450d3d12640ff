"""What `execute` answers of a tool's result (HTTP page "Calling a tool by hand"): the text a run's model would
see, cut at 64 KiB with a note, and the document a call's `read` points into."""

from __future__ import annotations

from auto_runtime.tools.hand_calls import MAX_SHOWN_BYTES, answer_of, shown_text
from auto_runtime.tools.servers import ContentBlock, ToolCallResult


def test_a_text_past_64_kib_is_cut_with_a_note() -> None:
    assert shown_text("short") == "short"
    long = "é" * MAX_SHOWN_BYTES
    shown = shown_text(long)
    kept, note = shown.split("\n[", 1)
    assert len(kept.encode()) <= MAX_SHOWN_BYTES and set(kept) == {"é"}
    assert note == f"Only the first {len(kept.encode()):,} of {len(long.encode()):,} bytes of this result are shown.]"


def test_the_answer_is_the_structured_content_else_the_first_text_as_json_else_that_text() -> None:
    text = ContentBlock("text", '{"a": 1}')
    assert answer_of(ToolCallResult((text,), structured={"b": 2})) == (True, {"b": 2})
    assert answer_of(ToolCallResult((text, ContentBlock("text", "x")))) == (True, {"a": 1})
    assert answer_of(ToolCallResult((ContentBlock("text", "plain"),))) == (True, "plain")
    assert answer_of(ToolCallResult((ContentBlock("image", None, "image/png"),))) == (False, None)
