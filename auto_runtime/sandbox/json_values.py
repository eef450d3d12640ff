"""JSON values as the host sees them and the host's compact writer."""

from __future__ import annotations

import json

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def compact_json(value: object) -> str:
    """Compact JSON as the runtime writes it: no spaces, non-ASCII as itself, floats shortest, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def utf8_size(text: str) -> int:
    """Bytes of `text` in UTF-8 (lone surrogates count as three bytes, as a writer that passes them would)."""
    return len(text.encode("utf-8", "surrogatepass"))
