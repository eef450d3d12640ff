"""Equality of JSON values as JSON means it, not as Python does.

Numbers compare by value (`1` equals `1.0`), a boolean equals only a boolean (Python holds `True == 1`),
`null` only `null`, objects have the same keys with equal values in any order, arrays are equal item by item.
Iterative, so any nesting is safe.
"""

from __future__ import annotations

from typing import Any


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def json_equal(left: Any, right: Any) -> bool:
    pending: list[tuple[Any, Any]] = [(left, right)]
    while pending:
        a, b = pending.pop()
        kind = _kind(a)
        if kind != _kind(b):
            return False
        if kind == "array":
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b, strict=True))
        elif kind == "object":
            if a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif a != b:
            return False
    return True
