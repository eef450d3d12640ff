"""The one reader of JSON request bodies, for the HTTP routes and the MCP endpoints.

The seeds ("Responses and errors"): a field given twice is `bad_request`. Python's `json.loads` keeps the last
value of a member given twice, takes `NaN` and `Infinity`, and raises on an integer longer than 4,300 digits;
this reader refuses the first two and reads the third as the infinity of its sign (`deep_json.json_integer`),
which the operation's input check refuses at its pointer. The fast path is `json.loads` with hooks; a body
it cannot read (nested past the recursion limit) or that gives a member twice is read again by the iterative
reader, which knows where it is and so names the member's JSON pointer.
"""

from __future__ import annotations

import json
from typing import Any

from auto_runtime.http.deep_json import DeepJsonError, DuplicateField, json_integer, loads_deep
from auto_runtime.problems import InputIssue, Rejection, bad_request, cut_text

__all__ = ["BodyNotJson", "DuplicateField", "duplicate_field_rejection", "read_json"]


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
        return loads_deep(text)
    except DeepJsonError as error:
        raise BodyNotJson(str(error)) from None


def duplicate_field_rejection(duplicate: DuplicateField, base: str = "") -> Rejection:
    """`bad_request` naming the member given twice, with its pointer (under `base`) in `errors`."""
    pointer = base + duplicate.pointer
    detail = cut_text(f"The field {duplicate.key} is given more than once, at {pointer}.")
    return bad_request(detail, errors=[InputIssue(detail, cut_text(pointer))])
