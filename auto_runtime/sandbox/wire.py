"""The host's reader of the guest writer's wire form, which needs no escaping inside the guest.

`n` null, `t` true, `f` false, `i<digits>;` an integer, `d<16 hex digits>;` a float's IEEE 754 bytes
(little-endian, so the host, not the sandbox's formatting, writes its shortest text), `s<bytes>:<UTF-8>`
a text whose length is counted in bytes, `[`…`]` an array of items, `{`…`}` an object of text keys each
followed by its value. The reader is iterative and trusts nothing: anything else is a `WireError`.
"""

from __future__ import annotations

import math
import struct

from auto_runtime.sandbox.json_values import JsonValue, compact_json, utf8_size


class WireError(ValueError):
    """The guest sent a result that is not in the wire form."""


def _float_of(hex_digits: bytes) -> float:
    if len(hex_digits) != 16:
        raise WireError("a float that is not 8 bytes")
    number: float = struct.unpack("<d", bytes.fromhex(hex_digits.decode("ascii")))[0]
    return number


def _number_end(data: bytes, at: int) -> int:
    end = data.find(b";", at)
    if end < 0:
        raise WireError(f"an unterminated number at {at}")
    return end


def _text_span(data: bytes, at: int) -> tuple[int, int]:
    """Where the text tagged at `at` starts, after its length and colon, and that length in bytes."""
    colon = data.find(b":", at)
    if colon < 0:
        raise WireError(f"an unterminated text length at {at}")
    return colon + 1, int(data[at + 1 : colon])


def read_wire(data: bytes) -> JsonValue:
    """Read one value from `data`, which must hold exactly that value."""
    stack: list[tuple[list[JsonValue] | dict[str, JsonValue], list[str | None]]] = []
    at = 0
    result: JsonValue = None
    done = False
    while True:
        if at >= len(data):
            raise WireError("the result ends early")
        tag = data[at : at + 1]
        value: JsonValue
        awaiting_key = stack and isinstance(stack[-1][0], dict) and stack[-1][1][0] is None
        if awaiting_key and tag not in (b"s", b"}"):
            raise WireError(f"an object key that is not text at {at}")
        if tag == b"n":
            value, at = None, at + 1
        elif tag == b"t":
            value, at = True, at + 1
        elif tag == b"f":
            value, at = False, at + 1
        elif tag == b"i":
            end = _number_end(data, at)
            value, at = int(data[at + 1 : end]), end + 1
        elif tag == b"d":
            end = _number_end(data, at)
            number = _float_of(data[at + 1 : end])
            if not math.isfinite(number):
                raise WireError(f"a float that is not finite at {at}")
            value, at = number, end + 1
        elif tag == b"s":
            start, length = _text_span(data, at)
            if length < 0 or start + length > len(data):
                raise WireError(f"a text longer than the result at {at}")
            value, at = data[start : start + length].decode("utf-8"), start + length
        elif tag == b"[":
            stack.append(([], [None]))
            at += 1
            continue
        elif tag == b"{":
            stack.append(({}, [None]))
            at += 1
            continue
        elif tag in (b"]", b"}"):
            if not stack or isinstance(stack[-1][0], dict) != (tag == b"}"):
                raise WireError(f"an unmatched {tag.decode()} at {at}")
            container, pending_key = stack.pop()
            if pending_key[0] is not None:
                raise WireError(f"an object key without a value at {at}")
            value, at = container, at + 1
        else:
            raise WireError(f"an unknown tag {tag!r} at {at}")
        if not stack:
            result, done = value, True
        else:
            container, pending_key = stack[-1]
            if isinstance(container, list):
                container.append(value)
            elif pending_key[0] is None:
                assert isinstance(value, str)
                pending_key[0] = value
            else:
                container[pending_key[0]] = value
                pending_key[0] = None
        if done:
            if at != len(data):
                raise WireError("bytes after the value")
            return result


def wire_prefix_size(data: bytes) -> int:
    """The compact JSON size of what a wire prefix wrote (its containers may be left open)."""
    size = 0
    open_containers: list[list[int]] = []
    at = 0
    while at < len(data):
        tag = data[at : at + 1]
        if tag in (b"]", b"}"):
            if not open_containers:
                raise WireError(f"an unmatched {tag.decode()} at {at}")
            open_containers.pop()
            size += 1
            at += 1
            continue
        if open_containers:
            is_object, count = open_containers[-1]
            if is_object:
                if count % 2 == 0:
                    size += 2 if count else 1
            elif count:
                size += 1
            open_containers[-1][1] = count + 1
        if tag in (b"[", b"{"):
            open_containers.append([1 if tag == b"{" else 0, 0])
            size += 1
            at += 1
        elif tag in (b"n", b"t"):
            size += 4
            at += 1
        elif tag == b"f":
            size += 5
            at += 1
        elif tag in (b"i", b"d"):
            end = _number_end(data, at)
            text = data[at + 1 : end]
            size += len(text) if tag == b"i" else len(repr(_float_of(text)))
            at = end + 1
        elif tag == b"s":
            start, length = _text_span(data, at)
            size += utf8_size(compact_json(data[start : start + length].decode("utf-8")))
            at = start + length
        else:
            raise WireError(f"an unknown tag {tag!r} at {at}")
    return size
