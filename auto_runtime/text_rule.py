"""The one rule for text that enters the runtime, and its words.

- No text holds a lone surrogate, wherever it is: a field the seeds define, a key or a string of JSON data (a run's
  input, an answer, an event's data). JSON can write one (`"\\ud800"`), UTF-8 cannot, so it could not be stored,
  sent on or shown. A proper pair is one character: JSON's decoder joins it, so a surrogate left in decoded text is
  a lone one.
- A text field the seeds define (a place an input schema types as a string: a name, a description, a source, an
  id, a filter) holds no U+0000: PostgreSQL refuses it in a `text` column, where SQLite would keep it, so both
  ledgers refuse it alike, before anything is stored or looked up. JSON data keeps it: the ledger stores data as
  JSON text, where it is the escape `\\u0000`, on both ledgers.

Each refusal is one sentence at the pointer of the text, in the words of every input problem: the field (a place
in data by its path, `answer, then note`), then the rule it broke.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from auto_runtime.json_pointers import pointer_of
from auto_runtime.problems import InputIssue, cut_text
from auto_runtime.schema_issues import name_of

NOT_UNICODE = "text that is valid Unicode, without a lone surrogate"
HOLDS_NUL = "text without the character U+0000"

Path = list[str | int]


def is_unicode(text: str) -> bool:
    """Whether `text` can be written in UTF-8, that is, holds no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_field_fault(text: str) -> str | None:
    """The rule a text field's value breaks (`NOT_UNICODE` or `HOLDS_NUL`), or None when it keeps both."""
    if not is_unicode(text):
        return NOT_UNICODE
    if "\x00" in text:
        return HOLDS_NUL
    return None


def lone_surrogate_paths(value: Any) -> Iterator[Path]:
    """The path of every key and string of a JSON value that holds a lone surrogate, in document order (a key's
    path is its member's). One C-speed pass of `json.dumps` tells a value without any; otherwise (or past the
    encoder's recursion) the walk is iterative and linear in the value's size: each node keeps a link to its
    parent's, and a path is spelled out only for a text found at fault, so a value nested at any depth is safe."""
    try:
        json.dumps(value, ensure_ascii=False, check_circular=False).encode("utf-8")
    except (ValueError, RecursionError, TypeError):
        pass
    else:
        return
    stack: list[tuple[Any, _Trail]] = [(value, None)]
    while stack:
        node, trail = stack.pop()
        if isinstance(node, str):
            if not is_unicode(node):
                yield _path_of(trail)
        elif isinstance(node, dict):
            children: list[tuple[Any, _Trail]] = []
            for key, child in node.items():
                if isinstance(key, str) and not is_unicode(key):
                    yield _path_of((trail, key))
                    continue
                children.append((child, (trail, key)))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            stack.extend((child, (trail, index)) for index, child in reversed(list(enumerate(node))))


_Trail = tuple[Any, str | int] | None
"""A node's place: None at the top, else its parent's trail and its own key or index."""


def _path_of(trail: _Trail) -> Path:
    path: Path = []
    while trail is not None:
        trail, part = trail
        path.append(part)
    path.reverse()
    return path


def not_unicode_issue(path: Sequence[str | int], base_pointer: str = "", root_name: str = "The input") -> InputIssue:
    """The sentence of a lone surrogate at `path` (under `base_pointer`), named as every input problem names it."""
    return InputIssue(
        cut_text(f"{name_of(path, root_name)}: expected {NOT_UNICODE}."), cut_text(base_pointer + pointer_of(path))
    )
