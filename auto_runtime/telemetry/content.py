"""Content as a span attribute: JSON text, cut to a bound so a large input never grows a span without one.

Recorded only when `TELEMETRY_CONTENT=true`; every content attribute's name starts with `CONTENT_PREFIX`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

CONTENT_PREFIX = "content."
MAX_CONTENT_CHARACTERS = 16_384


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return repr(value)


def content_text(value: Any) -> str:
    """`value` as JSON text (a string as it is), at most `MAX_CONTENT_CHARACTERS` characters, marked `…` when cut."""
    text = value if isinstance(value, str) else json.dumps(value, default=_plain, ensure_ascii=False)
    if len(text) > MAX_CONTENT_CHARACTERS:
        return text[: MAX_CONTENT_CHARACTERS - 1] + "…"
    return text
