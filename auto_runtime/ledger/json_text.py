"""JSON to text and back, so that every string a caller can hold round-trips through either store.

Text is produced with `ensure_ascii=False` (compact for non-ASCII), except that lone surrogates,
which UTF-8 cannot encode, are written as `\\uXXXX` escapes. U+0000 is always escaped by the
encoder (`\\u0000`), so stored text never holds a NUL, which PostgreSQL `text` refuses. Both stores
keep the text as text (not `jsonb`, which refuses `\\u0000` and lone surrogates).

One caveat, which is JSON's own: a high surrogate directly followed by a low surrogate in one Python
string reads back as the single character the pair encodes. Strings decoded from JSON never hold such
a pair, because the decoder already joined it.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""What `json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)` builds on every call,
built once (an encoder keeps no state between calls, so threads may share it)."""


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def dumps(value: Any) -> str:
    """Encode `value` as compact JSON text that is valid UTF-8 and holds no NUL character."""
    text = _ENCODER.encode(value)
    return text if text.isascii() else _SURROGATE.sub(_escape_surrogate, text)


def loads(text: str) -> Any:
    """Decode text written by `dumps`."""
    return json.loads(text)


def utf8_size(text: str) -> int:
    """The number of bytes `text` takes in UTF-8 (what the store keeps)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))
