"""The reply rule applied to a reply's words (interaction-format §1.5), and the durations of the format."""

from __future__ import annotations

from typing import Any

import pytest

from auto_runtime.functions.durations import interaction_duration_ms
from auto_runtime.functions.interaction.reply_rule import answer_of_reply, rule_words

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["decision"],
    "properties": {"decision": {"type": "string", "enum": ["go", "hold"]}, "reason": {"type": "string"}},
}
RULE = {"decision": {"from": "word", "words": {"go": ["yes", "ship"], "hold": ["no", "wait"]}}, "reason": "rest"}


@pytest.mark.parametrize(
    ("words", "answer"),
    [
        ("go", {"decision": "go"}),
        ("  GO!  ", {"decision": "go"}),
        ("«Ship»  it tonight ", {"decision": "go", "reason": "it tonight"}),
        ("wait, the freeze", {"decision": "hold", "reason": "the freeze"}),
        ("maybe", None),
        ("", None),
        ("   ", None),
    ],
)
def test_a_word_and_the_rest(words: str, answer: dict[str, Any] | None) -> None:
    assert answer_of_reply(RULE, SCHEMA, words) == answer


def test_text_keeps_the_whole_reply() -> None:
    assert answer_of_reply({"note": "text"}, {"type": "object"}, "  all of it  ") == {"note": "all of it"}


def test_the_words_that_tell_how_to_answer() -> None:
    assert rule_words(RULE, SCHEMA) == "To answer, reply with one of: go, hold. Words after it are kept as reason."
    assert rule_words({"note": "text"}, {}) == (
        "To answer, reply with your answer in words. The whole reply is kept as note."
    )


@pytest.mark.parametrize(
    ("text", "ms"),
    [("PT1M", 60_000), ("P1W", 604_800_000), ("P1DT2H", 93_600_000), ("PT0.5S", 500), ("PT1H30M", 5_400_000)],
)
def test_durations(text: str, ms: int) -> None:
    assert interaction_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["P1M", "P1Y", "PT", "P", "P1DT", "1H", "P1W2D", 60, None])
def test_durations_refused(text: Any) -> None:
    assert interaction_duration_ms(text) is None
