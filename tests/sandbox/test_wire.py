"""The host's reader of the guest writer's wire form, and its exact size of a prefix."""

from __future__ import annotations

import struct

import pytest

from auto_runtime.json_pointers import pointer_of
from auto_runtime.sandbox.json_values import JsonValue, compact_json
from auto_runtime.sandbox.wire import WireError, read_wire, wire_prefix_size


def wire(value: JsonValue) -> str:
    """The wire form, written the way the guest's writer writes it (test-only encoder)."""
    if value is None:
        return "n"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, int):
        return f"i{value};"
    if isinstance(value, float):
        return f"d{struct.pack('<d', value).hex()};"
    if isinstance(value, str):
        return f"s{len(value.encode())}:{value}"
    if isinstance(value, list):
        return "[" + "".join(wire(item) for item in value) + "]"
    return "{" + "".join(wire(key) + wire(item) for key, item in value.items()) + "}"


VALUES: list[JsonValue] = [
    None,
    True,
    [],
    {},
    [1, -2.5, 'é\n"\\', {"a": [None, False], "b:c": {}}],
    {"z": 1, "a": {"k": [[], [1e16, 5e-324, -0.0]]}},
    "x" * 100,
]


@pytest.mark.parametrize("value", VALUES)
def test_read_and_measure(value: JsonValue) -> None:
    data = wire(value).encode()
    assert read_wire(data) == value
    assert wire_prefix_size(data) == len(compact_json(value).encode())


def test_a_prefix_with_open_containers() -> None:
    data = wire({"a": [1, 2, {"b": "x"}]}).encode()
    prefix = data[: data.index(b"{", 1)]
    assert wire_prefix_size(prefix) == len(b'{"a":[1,2,') - 1


@pytest.mark.parametrize("data", [b"", b"[", b"x", b"i12", b"s5:ab", b"{i1;i2;}", b"[}", b"n n", b"]"])
def test_malformed_wire_is_refused(data: bytes) -> None:
    with pytest.raises((WireError, ValueError)):
        read_wire(data)


def test_pointers() -> None:
    assert pointer_of([]) == ""
    assert pointer_of(["a/b", 0, "m~n"]) == "/a~1b/0/m~0n"
