"""Sizes and depths of JSON values, as the seeds measure them: compact JSON in UTF-8, nesting levels."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

MAX_INPUT_BYTES = 256 * 1024
MAX_INPUT_DEPTH = 512
MAX_OUTPUT_AND_RECORD_BYTES = 1_048_576


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


def non_finite_pointer(value: Any) -> str | None:
    """The JSON Pointer of the first number too large for a double (read as an infinity), or None.

    JSON has no such number, so it cannot be measured, recorded or handed on: it is refused at its place."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return pointer
        if isinstance(node, dict):
            stack.extend(
                (child, f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}")
                for key, child in reversed(node.items())
            )
        elif isinstance(node, list):
            stack.extend((child, f"{pointer}/{index}") for index, child in reversed(list(enumerate(node))))
    return None
