"""Sizes and depths of JSON values, as the seeds measure them: compact JSON in UTF-8, nesting levels."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from auto_runtime.json_pointers import escape

MAX_INPUT_BYTES = 256 * 1024
MAX_INPUT_DEPTH = 512
MAX_OUTPUT_AND_RECORD_BYTES = 1_048_576
MAX_BODY_DEPTH_KEPT = MAX_INPUT_DEPTH + 128
"""How deep a request body is kept as read: no field takes a value nesting past `MAX_INPUT_DEPTH`, and no
envelope (a body's object, an MCP call's `params` and `arguments`) adds more than a few levels, so a body
kept to this depth is refused at the same place, in the same words, as the whole of it would be."""


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_size(value: Any) -> int:
    return len(compact_json(value).encode("utf-8", errors="surrogatepass"))


def canonical_digest(value: Any) -> str:
    """SHA-256 of the value as canonical JSON (sorted keys), to tell one input from another."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def depth_of(value: Any) -> int:
    """Nesting levels: a scalar is 0, `[]` and `{}` are 1, `[[1]]` is 2. Iterative, so any depth is safe."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            level += 1
            deepest = max(deepest, level)
            stack.extend((child, level) for child in node.values())
        elif isinstance(node, list):
            level += 1
            deepest = max(deepest, level)
            stack.extend((child, level) for child in node)
    return deepest


_Place = tuple[Any, str | int] | None
"""A node's place: None for the root, else its parent's place and its key or index."""


def _pointer(place: _Place) -> str:
    parts: list[str] = []
    while place is not None:
        place, part = place
        parts.append("/" + escape(part))
    return "".join(reversed(parts))


def non_finite_pointer(value: Any) -> str | None:
    """The JSON Pointer of the first number too large for a double (read as an infinity), or None.

    JSON has no such number, so it cannot be measured, recorded or handed on: it is refused at its place.
    Each node carries a link to its parent's place, and only the found one is written out as a pointer, so
    the walk costs one step a node however deep or wide the value is."""
    stack: list[tuple[Any, _Place]] = [(value, None)]
    while stack:
        node, place = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return _pointer(place)
        if isinstance(node, dict):
            stack.extend((child, (place, str(key))) for key, child in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((node[index], (place, index)) for index in range(len(node) - 1, -1, -1))
    return None
