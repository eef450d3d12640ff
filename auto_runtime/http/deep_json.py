"""Reading JSON nested deeper than Python's recursion allows, without recursion.

`json.loads` gives up past about a thousand levels, while a 1 MiB body can nest half a million deep. Such a
body is still a request whose input nests too deep, which the operation refuses at the field's pointer; so it
is read here, iteratively, into the same values `json.loads` would give, and checked like any other input.
"""

from __future__ import annotations

import json
import re
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class DeepJsonError(ValueError):
    """The text is not JSON."""


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _scalar(text: str, index: int) -> tuple[Any, int]:
    if text.startswith('"', index):
        match = _STRING.match(text, index)
        if match is None:
            raise DeepJsonError(f"a malformed string at {index}")
        return json.loads(match.group()), match.end()
    for word, value in _LITERALS.items():
        if text.startswith(word, index):
            return value, index + len(word)
    match = _NUMBER.match(text, index)
    if match is None or not match.group():
        raise DeepJsonError(f"an unexpected character at {index}")
    return json.loads(match.group()), match.end()


def _object_key(text: str, index: int) -> tuple[str, int]:
    """An object's key and its colon; the index after them and the white space that follows."""
    key, index = _scalar(text, index)
    if not isinstance(key, str):
        raise DeepJsonError(f"an object key that is not a string at {index}")
    index = _skip(text, index)
    if not text.startswith(":", index):
        raise DeepJsonError(f"a missing colon at {index}")
    return key, _skip(text, index + 1)


def loads_deep(text: str) -> Any:
    """The value of a JSON text, however deep, as `json.loads` would give it."""
    stack: list[tuple[list[Any] | dict[str, Any], str | None]] = []
    index = _skip(text, 0)
    value: Any = None
    while True:
        if index >= len(text):
            raise DeepJsonError("the text ends early")
        char = text[index]
        if char in "[{":
            container: list[Any] | dict[str, Any] = [] if char == "[" else {}
            index = _skip(text, index + 1)
            closing = "]" if char == "[" else "}"
            if text.startswith(closing, index):
                value, index = container, index + 1
            else:
                key = None
                if isinstance(container, dict):
                    key, index = _object_key(text, index)
                stack.append((container, key))
                continue
        else:
            value, index = _scalar(text, index)
        while True:
            index = _skip(text, index)
            if not stack:
                if index != len(text):
                    raise DeepJsonError(f"extra text at {index}")
                return value
            container, key = stack.pop()
            if isinstance(container, list):
                container.append(value)
            else:
                assert key is not None
                container[key] = value
            closing = "]" if isinstance(container, list) else "}"
            if text.startswith(closing, index):
                value, index = container, index + 1
                continue
            if not text.startswith(",", index):
                raise DeepJsonError(f"a missing comma at {index}")
            index = _skip(text, index + 1)
            next_key = None
            if isinstance(container, dict):
                next_key, index = _object_key(text, index)
            stack.append((container, next_key))
            break
