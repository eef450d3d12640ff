"""The reply rule applied to a reply's words (interaction-format §1.5), as the request recorded it.

`answer_of_reply(rule, schema, words)` is the answer the words give, or None when they give none: an empty reply,
or a first word that matches no value of a `word` part. Parts: `word` (the first word, lowercased and stripped of
punctuation and symbols at both ends, equal to an enum value or one of its listed words compared the same way),
`rest` (what follows the first word, trimmed; left out when nothing follows) and `text` (the whole reply, trimmed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auto_runtime.functions.interaction.document import normalized_word


def _enum_of(schema: Mapping[str, Any], name: str) -> list[str]:
    properties = schema.get("properties")
    field = properties.get(name) if isinstance(properties, dict) else None
    enum = field.get("enum") if isinstance(field, dict) else None
    return [value for value in enum if isinstance(value, str)] if isinstance(enum, list) else []


def _meaning(part: Any, enum: list[str]) -> dict[str, str]:
    meaning = {normalized_word(value): value for value in enum}
    words = part.get("words") if isinstance(part, dict) else None
    if isinstance(words, dict):
        for value, listed in words.items():
            for word in listed if isinstance(listed, list) else []:
                if isinstance(word, str):
                    meaning.setdefault(normalized_word(word), str(value))
    return meaning


def answer_of_reply(rule: Mapping[str, Any], schema: Mapping[str, Any], words: str) -> dict[str, Any] | None:
    text = words.strip()
    if not text:
        return None
    parts = text.split(None, 1)
    first = parts[0]
    rest = parts[1].strip() if len(parts) > 1 else ""
    answer: dict[str, Any] = {}
    for name, part in rule.items():
        source = part.get("from") if isinstance(part, dict) else part
        if source == "word":
            value = _meaning(part, _enum_of(schema, name)).get(normalized_word(first))
            if value is None:
                return None
            answer[name] = value
        elif source == "rest":
            if rest:
                answer[name] = rest
        elif source == "text":
            answer[name] = text
    return answer


def rule_words(rule: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """The words that tell an answerer how to answer (§5.4, `not_an_answer`)."""
    word_parts = [
        name for name, part in rule.items() if (part.get("from") if isinstance(part, dict) else part) == "word"
    ]
    rests = [name for name, part in rule.items() if part == "rest"]
    texts = [name for name, part in rule.items() if part == "text"]
    if not word_parts:
        sentence = "To answer, reply with your answer in words."
    else:
        values = _enum_of(schema, word_parts[0])
        sentence = f"To answer, reply with one of: {', '.join(values)}."
    if rests:
        sentence += f" Words after it are kept as {', '.join(rests)}."
    if texts:
        sentence += f" The whole reply is kept as {', '.join(texts)}."
    return sentence
