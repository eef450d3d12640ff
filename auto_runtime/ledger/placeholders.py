"""`?` placeholders (the form every ledger SQL string is written in) to asyncpg's `$n`."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=512)
def to_numbered(sql: str) -> str:
    """Replace each `?` outside quoted text and identifiers with `$1`, `$2`, ... in order."""
    out: list[str] = []
    number = 0
    quote: str | None = None
    for char in sql:
        if quote is not None:
            if char == quote:
                quote = None
            out.append(char)
        elif char in ("'", '"'):
            quote = char
            out.append(char)
        elif char == "?":
            number += 1
            out.append(f"${number}")
        else:
            out.append(char)
    return "".join(out)
