"""Opaque page cursors bound to one playbook and one kind of listing; any other cursor is refused at `/cursor`."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from auto_runtime.ledger import PlaybookScope
from auto_runtime.problems import InputIssue, Rejection, invalid_input


def foreign_cursor() -> Rejection:
    return invalid_input([InputIssue("cursor: expected a cursor this playbook gave.", "/cursor")])


def encode_cursor(scope: PlaybookScope, listing: str, position: dict[str, Any]) -> str:
    raw = json.dumps({"s": scope.key, "l": listing, "p": position}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, scope: PlaybookScope, listing: str) -> dict[str, Any]:
    """The position a cursor of this playbook's `listing` holds; `invalid_input` at `/cursor` for any other."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        raise foreign_cursor() from None
    if not isinstance(raw, dict) or raw.get("s") != scope.key or raw.get("l") != listing:
        raise foreign_cursor()
    position = raw.get("p")
    if not isinstance(position, dict):
        raise foreign_cursor()
    return position
