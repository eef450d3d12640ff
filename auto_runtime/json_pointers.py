"""JSON Pointers (RFC 6901): the one place that escapes, unescapes, joins and splits them.

A reference token writes `~` as `~0` and `/` as `~1`; unescaping reads `~1` before `~0`, so `~01` is `~1`, never
`/`. A pointer is empty (the whole document) or `/` followed by tokens joined with `/`. Array indexes are tokens
like any other: these functions neither check nor convert them.
"""

from __future__ import annotations

from collections.abc import Iterable


def escape(token: str | int) -> str:
    """One reference token as a pointer writes it."""
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """One reference token as the key it names."""
    return token.replace("~1", "/").replace("~0", "~")


def pointer_of(tokens: Iterable[str | int]) -> str:
    """The pointer of a path of keys and indexes; `""` for the top."""
    return "".join("/" + escape(token) for token in tokens)


def tokens_of(pointer: str) -> list[str]:
    """The keys a pointer names, unescaped; `[]` for `""`. `pointer` is empty or starts with `/`."""
    return [unescape(token) for token in pointer.split("/")[1:]]
