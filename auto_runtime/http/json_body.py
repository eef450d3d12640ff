"""The one reader of JSON request bodies, for the HTTP routes and the MCP endpoints.

The seeds ("Responses and errors"): a field given twice is `bad_request`. Python's `json.loads` keeps the last
value of a member given twice, takes `NaN` and `Infinity`, and raises on an integer longer than 4,300 digits;
this reader refuses the first two and reads the third as the infinity of its sign (`deep_json.json_integer`),
which the operation's input check refuses at its pointer. The fast path is `json.loads` with hooks; a body
it cannot read (nested past the recursion limit) or that gives a member twice is read again by the iterative
reader, which knows where it is and so names the member's JSON pointer. The iterative reader keeps
`MAX_BODY_DEPTH_KEPT` levels: deeper containers are read and checked but kept empty (`deep_json.loads_deep`), so
no later check walks half a million levels, and every field's bound on depth still refuses the value there.

Concurrency (`read_json_bytes`): reading is CPU work the Trio thread must not do unbounded. A body of at most
`INLINE_PARSE_BYTES` whose brackets cannot nest past the kept depth (counted at C speed) is read in place, at
C speed, in well under a millisecond. Every other body (large, or deep enough to need the iterative reader) is
decoded and read in a worker thread, at most `PARSED_AT_ONCE` at once (one `trio.CapacityLimiter` for the
process); the rest wait their turn without holding the event loop.
"""

from __future__ import annotations

import json
from typing import Any, Final

import trio

from auto_runtime.http.deep_json import DeepJsonError, DuplicateField, json_integer, loads_deep
from auto_runtime.json_limits import MAX_BODY_DEPTH_KEPT
from auto_runtime.problems import InputIssue, Rejection, bad_request, cut_text

__all__ = ["BodyNotJson", "DuplicateField", "duplicate_field_rejection", "read_json", "read_json_bytes"]

INLINE_PARSE_BYTES: Final = 65_536
"""The largest body read on the Trio thread (when it cannot nest deep): `json.loads` reads it in well under a
millisecond, which a worker thread's hand-off would cost as much as."""
PARSED_AT_ONCE: Final = 2
"""How many bodies are read in worker threads at once; a worker holds the GIL while it reads, so more would
only slow the event loop without reading faster on a small machine."""
_BODY_READERS: Final = trio.CapacityLimiter(PARSED_AT_ONCE)


class BodyNotJson(ValueError):
    """The text is not JSON; the message says why, in words that follow "The body is not JSON: "."""


class _GivenTwice(ValueError):
    """Raised by the fast path's hook; the iterative reader then finds where."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise _GivenTwice
    return members


def _not_json(word: str) -> Any:
    raise BodyNotJson(f"{word} is not a JSON value")


def read_json(text: str) -> Any:
    """The value of the JSON text; `BodyNotJson` or `DuplicateField` when it cannot be taken."""
    try:
        return json.loads(text, object_pairs_hook=_unique_members, parse_int=json_integer, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        raise BodyNotJson(f"{error.msg} at line {error.lineno}") from None
    except (RecursionError, _GivenTwice):
        pass
    try:
        return loads_deep(text, keep_depth=MAX_BODY_DEPTH_KEPT)
    except DeepJsonError as error:
        raise BodyNotJson(str(error)) from None


def may_nest_past(body: bytes, depth: int) -> bool:
    """Whether the body has more opening brackets than `depth` (so might nest deeper); two C-speed counts."""
    return body.count(b"[") + body.count(b"{") > depth


def read_json_body(body: bytes) -> Any:
    """The value of a UTF-8 JSON body: `UnicodeDecodeError`, `BodyNotJson` or `DuplicateField` as `read_json`."""
    return read_json(body.decode("utf-8"))


async def read_json_bytes(body: bytes) -> Any:
    """`read_json_body`, in place for a small shallow body, else in a worker thread (see the module)."""
    if len(body) <= INLINE_PARSE_BYTES and not may_nest_past(body, MAX_BODY_DEPTH_KEPT):
        return read_json_body(body)
    return await trio.to_thread.run_sync(read_json_body, body, limiter=_BODY_READERS)


def duplicate_field_rejection(duplicate: DuplicateField, base: str = "") -> Rejection:
    """`bad_request` naming the member given twice, with its pointer (under `base`) in `errors`."""
    pointer = base + duplicate.pointer
    detail = cut_text(f"The field {duplicate.key} is given more than once, at {pointer}.")
    return bad_request(detail, errors=[InputIssue(detail, cut_text(pointer))])
