"""Reading JSON nested deeper than Python's recursion allows, without recursion, and the rules every body
reader shares.

`json.loads` gives up past about a thousand levels, while a 1 MiB body can nest half a million deep. Such a
body is still a request whose input nests too deep, which the operation refuses at the field's pointer; so it
is read here, iteratively, into the same values the fast reader (`json_body.read_json`) gives, and checked like
any other input. Both readers share three rules:

- A member given twice in one object is refused (`DuplicateField`), with the JSON pointer of the second one.
- An integer too long for the interpreter to convert (`sys.get_int_max_str_digits()`, 4,300 digits) is far
  beyond any double, so it is read as the infinity of its sign, which the operation's input check refuses at
  its pointer as a number too large for a double, as it refuses `1e400`.
- `NaN` and `Infinity`, which Python's reader takes, are not JSON (this reader never matches them).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from auto_runtime.schema_issues import pointer_of

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class DeepJsonError(ValueError):
    """The text is not JSON."""


class DuplicateField(ValueError):
    """An object gives one member twice: `key`, and `pointer`, the JSON pointer of the second one."""

    def __init__(self, key: str, pointer: str) -> None:
        super().__init__(f"the field {key} is given more than once, at {pointer}")
        self.key = key
        self.pointer = pointer


def json_integer(text: str) -> int | float:
    """The integer a JSON number without fraction or exponent writes, or the infinity of its sign when it is
    longer than the interpreter converts (it is then far past the largest double, about 1.8e308)."""
    try:
        return int(text)
    except ValueError:
        return -math.inf if text.startswith("-") else math.inf


def _number(text: str) -> int | float:
    if any(mark in text for mark in ".eE"):
        return float(text)
    return json_integer(text)


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
    return _number(match.group()), match.end()


Frame = tuple[list[Any] | dict[str, Any], str | None]


def _path(stack: list[Frame]) -> list[str | int]:
    """The place of the value being read: each open container's key, or the index its next item takes."""
    return [len(container) if isinstance(container, list) else str(key) for container, key in stack]


def _object_key(text: str, index: int, container: dict[str, Any], stack: list[Frame]) -> tuple[str, int]:
    """An object's key and its colon; the index after them and the white space that follows."""
    key, index = _scalar(text, index)
    if not isinstance(key, str):
        raise DeepJsonError(f"an object key that is not a string at {index}")
    if key in container:
        raise DuplicateField(key, pointer_of("", [*_path(stack), key]))
    index = _skip(text, index)
    if not text.startswith(":", index):
        raise DeepJsonError(f"a missing colon at {index}")
    return key, _skip(text, index + 1)


def loads_deep(text: str) -> Any:
    """The value of a JSON text, however deep; `DuplicateField` for a member given twice."""
    stack: list[Frame] = []
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
                    key, index = _object_key(text, index, container, stack)
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
                next_key, index = _object_key(text, index, container, stack)
            stack.append((container, next_key))
            break
