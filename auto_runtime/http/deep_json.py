"""Reading JSON nested deeper than Python's recursion allows, without recursion, and the rules every body
reader shares.

`json.loads` gives up past about a thousand levels, while a 1 MiB body can nest half a million deep. Such a
body is still a request whose input nests too deep, which the operation refuses at the field's pointer; so it
is read here, iteratively, into the same values the fast reader (`json_body.read_json`) gives, and checked like
any other input. A body reader asks it to keep only so many levels (`keep_depth`): what nests deeper is still
read and checked (its syntax, its members given twice, at their pointers) but kept as an empty container, so
the value is as deep as any check needs to refuse it, and no deeper. It never recurses, and costs one short
step a character, or far less for runs of brackets (read a run at a time at C speed). Both readers share three
rules:

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
from typing import Any, Final

from auto_runtime.json_pointers import pointer_of

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_OPENING_RUN = re.compile(r"[\[ \t\n\r]*")
_CLOSING_RUN = re.compile(r"[\] \t\n\r]*")


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
        quoted = match.group()
        return (quoted[1:-1] if "\\" not in quoted else json.loads(quoted)), match.end()
    for word, value in _LITERALS.items():
        if text.startswith(word, index):
            return value, index + len(word)
    match = _NUMBER.match(text, index)
    if match is None or not match.group():
        raise DeepJsonError(f"an unexpected character at {index}")
    return _number(match.group()), match.end()


class _DroppedObject:
    """An object nested past the kept depth: read and checked like any other, its keys remembered (for the
    members given twice in it), but not kept. A dropped list is only its count of items so far (an `int` in
    its frame): the pointers below it need nothing more, and a frame of plain values costs the collector
    nothing however many a chain of lists opens."""

    __slots__ = ("keys",)

    def __init__(self) -> None:
        self.keys: set[str] = set()


Container = list[Any] | dict[str, Any] | _DroppedObject | int
Frame = tuple[Container, str | None]
_DROPPED_LIST: Final[Frame] = (0, None)
"""The frame of a dropped list that has no item yet; frames are immutable, so one serves every such list."""


def _list_run(text: str, index: int) -> tuple[int, int, int]:
    """At an opening bracket: how many lists open in a row (white space between them), how many of the inner
    ones close right after them with nothing inside (`[[[ ]]]`, the shape of a body nested as deep as its size
    allows), and the index after those closing brackets (after the opening ones when none close). Found with a
    class of characters repeated and counted, at C speed, once for the whole run."""
    opening = _OPENING_RUN.match(text, index)
    assert opening is not None
    levels = opening.group().count("[")
    closing = _CLOSING_RUN.match(text, opening.end())
    assert closing is not None
    run = closing.group()
    closes = min(levels, run.count("]"))
    if closes == 0:
        return levels, 0, opening.end()
    return levels, closes, opening.end() + _after_nth(run, "]", closes)


def _dropped_lists_closing(text: str, index: int, stack: list[Frame]) -> int | None:
    """When closing brackets at `index` end two or more dropped lists at the top of `stack`: pops them all at
    once and gives the index after their brackets (the last one's placeholder, `[]`, is the value read); else
    None. The way back up a chain of lists as deep as its body allows, one short step a level."""
    if not text.startswith("]", index):
        return None
    run = _CLOSING_RUN.match(text, index)
    assert run is not None
    closes = run.group().count("]")
    ended = 0
    for container, _ in reversed(stack):
        if ended == closes or not isinstance(container, int):
            break
        ended += 1
    if ended < 2:
        return None
    del stack[-ended:]
    return index + _after_nth(run.group(), "]", ended)


def _after_nth(text: str, char: str, count: int) -> int:
    """The index just after the `count`-th `char` of `text` (which holds at least that many): at once when the
    text starts with them, else the shortest prefix holding `count` of them, found by halving with C-speed
    counts."""
    if text.startswith(char * count):
        return count
    low, high = count, len(text)
    while low < high:
        middle = (low + high) // 2
        if text.count(char, 0, middle) >= count:
            high = middle
        else:
            low = middle + 1
    return low


def _path(stack: list[Frame]) -> list[str | int]:
    """The place of the value being read: each open container's key, or the index its next item takes."""
    path: list[str | int] = []
    for container, key in stack:
        if isinstance(container, list):
            path.append(len(container))
        elif isinstance(container, int):
            path.append(container)
        else:
            path.append(str(key))
    return path


def _object_key(text: str, index: int, container: Container, stack: list[Frame]) -> tuple[str, int]:
    """An object's key and its colon; the index after them and the white space that follows."""
    key, index = _scalar(text, index)
    if not isinstance(key, str):
        raise DeepJsonError(f"an object key that is not a string at {index}")
    keys = container.keys if isinstance(container, _DroppedObject) else container
    assert isinstance(keys, dict | set)
    if key in keys:
        raise DuplicateField(key, pointer_of([*_path(stack), key]))
    if isinstance(container, _DroppedObject):
        container.keys.add(key)
    index = _skip(text, index)
    if not text.startswith(":", index):
        raise DeepJsonError(f"a missing colon at {index}")
    return key, _skip(text, index + 1)


def _kept(container: Container, key: str | None, value: Any) -> Container:
    """The container with `value` added as its next item or as member `key` (a dropped one counts it)."""
    if isinstance(container, list):
        container.append(value)
    elif isinstance(container, dict):
        assert key is not None
        container[key] = value
    elif isinstance(container, int):
        return container + 1
    return container


def loads_deep(text: str, keep_depth: int | None = None) -> Any:
    """The value of a JSON text, however deep; `DuplicateField` for a member given twice.

    With `keep_depth`, a container nested deeper than that many levels is read and checked but kept as an
    empty container of its kind: the value then nests exactly `keep_depth + 1` levels there, so a bound on
    depth below `keep_depth` refuses it at the same place, while the reader keeps no more than it needs (a
    value half a million levels deep would cost every later check a walk of that depth). Runs of brackets
    below the kept depth are read a run at a time (`_list_run`, `_dropped_lists_closing`)."""
    stack: list[Frame] = []
    index = _skip(text, 0)
    value: Any = None
    while True:
        if index >= len(text):
            raise DeepJsonError("the text ends early")
        char = text[index]
        dropping = keep_depth is not None and len(stack) >= keep_depth
        if char == "[" and dropping:
            levels, closes, index = _list_run(text, index)
            stack.extend([_DROPPED_LIST] * (levels - closes))
            if not closes:
                continue
            value = []
        elif char in "[{":
            is_list = char == "["
            index = _skip(text, index + 1)
            if text.startswith("]" if is_list else "}", index):
                value, index = ([] if is_list else {}), index + 1
            else:
                container: Container = _DroppedObject() if dropping else [] if is_list else {}
                key = None
                if not is_list:
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
            closed = _dropped_lists_closing(text, index, stack)
            if closed is not None:
                value, index = [], closed
                continue
            container, key = stack.pop()
            container = _kept(container, key, value)
            is_list = isinstance(container, list | int)
            if text.startswith("]" if is_list else "}", index):
                if isinstance(container, int):
                    value = []
                elif isinstance(container, _DroppedObject):
                    value = {}
                else:
                    value = container
                index += 1
                continue
            if not text.startswith(",", index):
                raise DeepJsonError(f"a missing comma at {index}")
            index = _skip(text, index + 1)
            next_key = None
            if not is_list:
                next_key, index = _object_key(text, index, container, stack)
            stack.append((container, next_key))
            break
